/* table.h - column-aligned text tables for the CLI's output.
 *
 * Build a table (table_new), name its columns, add rows of cells (copied
 * and cleaned of control characters, so cells may come straight from the
 * daemon's answers), then print it plain (`headroom list`) or boxed
 * (`headroom show`). Widths count UTF-8 code points.
 */
#ifndef HR_CLI_TABLE_H
#define HR_CLI_TABLE_H

#include <stddef.h>
#include <stdio.h>

enum table_align { TABLE_LEFT, TABLE_RIGHT };
enum table_style {
	TABLE_PLAIN, /* columns two spaces apart, no rules */
	TABLE_BOX,   /* ASCII rules around the header and the body */
};

struct table;

/* A table of ncols (>= 1) columns, all left-aligned with empty titles. */
struct table *table_new(size_t ncols);
void table_free(struct table *t); /* NULL is a no-op */

/* Title (copied) and alignment of column col (< ncols). */
void table_column(struct table *t, size_t col, const char *title, enum table_align align);

/* Appends a row of ncols cells (each copied and cleaned; NULL shows "-"). */
void table_add_row(struct table *t, const char *const *cells);

size_t table_rows(const struct table *t);

/* Writes the table to out. */
void table_print(const struct table *t, FILE *out, enum table_style style);

#endif
