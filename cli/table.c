/* table.c - column-aligned text tables (plain or ASCII-boxed). */
#include "table.h"

#include <stdlib.h>

#include "util.h"
#include "view.h"

struct table {
	size_t ncols;
	size_t nrows, cap;
	char **title;            /* ncols, owned */
	enum table_align *align; /* ncols */
	char **cells;            /* nrows * ncols, owned */
};

struct table *table_new(size_t ncols)
{
	struct table *t = xcalloc(1, sizeof(*t));
	t->ncols = ncols ? ncols : 1;
	t->title = xcalloc(t->ncols, sizeof(*t->title));
	t->align = xcalloc(t->ncols, sizeof(*t->align));
	for (size_t c = 0; c < t->ncols; c++) {
		t->title[c] = xstrdup("");
		t->align[c] = TABLE_LEFT;
	}
	return t;
}

void table_free(struct table *t)
{
	if (!t)
		return;
	for (size_t c = 0; c < t->ncols; c++)
		free(t->title[c]);
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->title);
	free(t->align);
	free(t->cells);
	free(t);
}

void table_column(struct table *t, size_t col, const char *title, enum table_align align)
{
	if (col >= t->ncols)
		return;
	free(t->title[col]);
	t->title[col] = view_clean(title ? title : "");
	t->align[col] = align;
}

void table_add_row(struct table *t, const char *const *cells)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = xrealloc(t->cells, t->cap * t->ncols * sizeof(*t->cells));
	}
	char **row = t->cells + t->nrows * t->ncols;
	for (size_t c = 0; c < t->ncols; c++)
		row[c] = view_clean(cells[c]);
	t->nrows++;
}

size_t table_rows(const struct table *t)
{
	return t->nrows;
}

static void pad(FILE *out, size_t n, char ch)
{
	while (n--)
		fputc(ch, out);
}

static void rule(const struct table *t, const size_t *w, FILE *out)
{
	for (size_t c = 0; c < t->ncols; c++) {
		fputc('+', out);
		pad(out, w[c] + 2, '-');
	}
	fputs("+\n", out);
}

static void line(const struct table *t, const size_t *w, char *const *cells, FILE *out,
                 enum table_style style)
{
	for (size_t c = 0; c < t->ncols; c++) {
		size_t gap = w[c] - view_width(cells[c]);
		int last = c + 1 == t->ncols;
		if (style == TABLE_BOX)
			fputs("| ", out);
		else if (c > 0)
			fputs("  ", out);
		if (t->align[c] == TABLE_RIGHT)
			pad(out, gap, ' ');
		fputs(cells[c], out);
		if (t->align[c] == TABLE_LEFT && (style == TABLE_BOX || !last))
			pad(out, gap, ' ');
		if (style == TABLE_BOX)
			fputc(' ', out);
	}
	fputs(style == TABLE_BOX ? "|\n" : "\n", out);
}

void table_print(const struct table *t, FILE *out, enum table_style style)
{
	size_t *w = xcalloc(t->ncols, sizeof(*w));
	for (size_t c = 0; c < t->ncols; c++) {
		w[c] = view_width(t->title[c]);
		for (size_t r = 0; r < t->nrows; r++) {
			size_t cw = view_width(t->cells[r * t->ncols + c]);
			if (cw > w[c])
				w[c] = cw;
		}
	}
	if (style == TABLE_BOX)
		rule(t, w, out);
	line(t, w, t->title, out, style);
	if (style == TABLE_BOX)
		rule(t, w, out);
	for (size_t r = 0; r < t->nrows; r++)
		line(t, w, t->cells + r * t->ncols, out, style);
	if (style == TABLE_BOX && t->nrows > 0)
		rule(t, w, out);
	free(w);
}
