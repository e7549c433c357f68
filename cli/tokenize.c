/* tokenize.c - `headroom tokenize`: token ids of stdin with a tokenizer
 * file (lib/tokenizer.h), for checking a tokenizer against its reference
 * and for measuring its speed. Works offline; it does not talk to the
 * daemon.
 *
 *   headroom tokenize --tokenizer FILE [--count] [--special] [--batch] [--time]
 *   headroom tokenize --tokenizer FILE --decode
 *
 * Without --batch, all of stdin is one text: its ids are printed one per
 * line (with --count, only their number). With --batch, stdin is a
 * sequence of records "<decimal byte length>\n<that many bytes>", and each
 * record gets one output line: its ids separated by spaces (or its count).
 * --decode reads ids (whitespace separated) and writes the bytes they
 * stand for. --time reports load and encode times on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "dynbuf.h"
#include "tokenizer.h"
#include "util.h"

#define TOKENIZE_MAX_INPUT (1u << 30) /* stdin of one text, or one record: 1 GiB */

int cmd_tokenize(int argc, char **argv);

static const char tokenize_help[] =
    "usage: headroom tokenize --tokenizer FILE [--count] [--special] [--batch] [--time]\n"
    "       headroom tokenize --tokenizer FILE --decode\n"
    "\n"
    "Encodes stdin with a tokenizer file and prints the token ids, one per line.\n"
    "FILE is a Hugging Face tokenizer.json (byte-level BPE), a tiktoken JSON\n"
    "encoder (npm tiktoken's encoders/*.json) or a .tiktoken rank file of a known\n"
    "encoding. See docs/tokenizer.md.\n"
    "\n"
    "  --tokenizer FILE  the tokenizer file (also -t FILE)\n"
    "  --count           print only the number of tokens\n"
    "  --special         treat special tokens written in the text (<|endoftext|>)\n"
    "                    as special tokens; by default they are ordinary text\n"
    "  --batch           stdin holds records \"<byte length>\\n<bytes>\"; print one\n"
    "                    line per record: its ids separated by spaces (or its count)\n"
    "  --decode          read ids from stdin and write the text they stand for\n"
    "  --time            print load and encode times and speed on stderr\n"
    "\n"
    "exit codes: 0 done; 1 encoding failed or stdout could not be written;\n"
    "2 usage error, unreadable or invalid tokenizer file, or bad input.\n";

static double cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mono_s(void)
{
	return (double)mono_ns() / 1e9;
}

/* Reads all of f into b. Returns 0, or -1 when larger than b's maximum or
 * on a read error (message printed). */
static int read_all(FILE *f, struct dynbuf *b)
{
	char chunk[1 << 16];
	size_t got;
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (dynbuf_add(b, chunk, got) < 0) {
			fprintf(stderr, "headroom tokenize: input larger than %zu bytes\n", b->max);
			return -1;
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "headroom tokenize: reading stdin: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Writes ids, each followed by sep (the last by '\n'), through a buffer. */
static void print_ids(const struct tok_ids *ids, char sep)
{
	char buf[1 << 16];
	size_t n = 0;
	for (size_t i = 0; i < ids->len; i++) {
		if (n > sizeof(buf) - 16) {
			fwrite(buf, 1, n, stdout);
			n = 0;
		}
		char tmp[12];
		int k = 0;
		uint32_t v = ids->v[i];
		do {
			tmp[k++] = (char)('0' + v % 10);
			v /= 10;
		} while (v);
		while (k)
			buf[n++] = tmp[--k];
		buf[n++] = i + 1 < ids->len ? sep : '\n';
	}
	if (sep == ' ' && ids->len == 0)
		buf[n++] = '\n';
	fwrite(buf, 1, n, stdout);
}

struct stats {
	double cpu, wall;
	unsigned long long bytes, tokens;
};

static int encode_one(const struct tok *tok, const char *text, size_t len, unsigned flags,
                      int count, int batch, struct tok_ids *ids, struct stats *st)
{
	char err[HR_ERRLEN];
	ids->len = 0;
	double c0 = cpu_s(), w0 = mono_s();
	int rc = tok_encode_ex(tok, text, len, flags, ids, err);
	st->cpu += cpu_s() - c0;
	st->wall += mono_s() - w0;
	st->bytes += len;
	st->tokens += ids->len;
	if (rc < 0) {
		fprintf(stderr, "headroom tokenize: %s\n", err);
		return EXIT_RUN_FAILED;
	}
	if (count)
		printf("%zu\n", ids->len);
	else
		print_ids(ids, batch ? ' ' : '\n');
	return EXIT_OK;
}

static int run_batch(const struct tok *tok, unsigned flags, int count, struct stats *st)
{
	struct tok_ids ids;
	tok_ids_init(&ids);
	char *buf = NULL;
	size_t cap = 0;
	int ex = EXIT_OK;
	for (;;) {
		char line[32];
		if (!fgets(line, sizeof(line), stdin))
			break;
		char *end;
		errno = 0;
		unsigned long long len = strtoull(line, &end, 10);
		if (errno || end == line || *end != '\n' || len > TOKENIZE_MAX_INPUT) {
			fprintf(stderr, "headroom tokenize: bad batch record header '%.20s'\n",
			        line);
			ex = EXIT_USAGE;
			break;
		}
		if (len + 1 > cap) {
			cap = (size_t)len + 1;
			buf = xrealloc(buf, cap);
		}
		if (fread(buf, 1, (size_t)len, stdin) != len) {
			fprintf(stderr, "headroom tokenize: batch record cut short\n");
			ex = EXIT_USAGE;
			break;
		}
		if ((ex = encode_one(tok, buf, (size_t)len, flags, count, 1, &ids, st)) != EXIT_OK)
			break;
	}
	free(buf);
	tok_ids_release(&ids);
	return ex;
}

static int run_decode(const struct tok *tok)
{
	struct dynbuf in, out;
	dynbuf_init(&in, TOKENIZE_MAX_INPUT);
	dynbuf_init(&out, TOKENIZE_MAX_INPUT);
	int ex = EXIT_OK;
	if (read_all(stdin, &in) < 0) {
		ex = EXIT_USAGE;
		goto out;
	}
	const char *p = in.data ? in.data : "";
	for (;;) {
		while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			break;
		char *end;
		errno = 0;
		unsigned long v = strtoul(p, &end, 10);
		char err[HR_ERRLEN];
		if (errno || end == p || v > UINT32_MAX ||
		    (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r')) {
			fprintf(stderr, "headroom tokenize: not a token id: '%.20s'\n", p);
			ex = EXIT_USAGE;
			goto out;
		}
		uint32_t id = (uint32_t)v;
		if (tok_decode(tok, &id, 1, &out, err) < 0) {
			fprintf(stderr, "headroom tokenize: %s\n", err);
			ex = EXIT_USAGE;
			goto out;
		}
		p = end;
	}
	fwrite(out.data ? out.data : "", 1, out.len, stdout);
out:
	dynbuf_release(&in);
	dynbuf_release(&out);
	return ex;
}

int cmd_tokenize(int argc, char **argv)
{
	const char *file = NULL;
	int count = 0, special = 0, batch = 0, decode = 0, timing = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			fputs(tokenize_help, stdout);
			return EXIT_OK;
		} else if (strcmp(a, "--tokenizer") == 0 || strcmp(a, "-t") == 0) {
			if (i + 1 >= argc) {
				fputs("headroom: option '--tokenizer' needs a value\n"
				      "Try 'headroom tokenize --help'.\n",
				      stderr);
				return EXIT_USAGE;
			}
			file = argv[++i];
		} else if (strncmp(a, "--tokenizer=", 12) == 0) {
			file = a + 12;
		} else if (strcmp(a, "--count") == 0) {
			count = 1;
		} else if (strcmp(a, "--special") == 0) {
			special = 1;
		} else if (strcmp(a, "--batch") == 0) {
			batch = 1;
		} else if (strcmp(a, "--decode") == 0) {
			decode = 1;
		} else if (strcmp(a, "--time") == 0) {
			timing = 1;
		} else {
			fprintf(stderr,
			        "headroom: unknown option or argument '%s'\n"
			        "Try 'headroom tokenize --help'.\n",
			        a);
			return EXIT_USAGE;
		}
	}
	if (!file || !*file) {
		fputs("headroom: 'tokenize' needs --tokenizer FILE\n"
		      "Try 'headroom tokenize --help'.\n",
		      stderr);
		return EXIT_USAGE;
	}
	if (decode && (count || special || batch)) {
		fputs("headroom: --decode takes no --count, --special or --batch\n", stderr);
		return EXIT_USAGE;
	}

	char err[HR_ERRLEN];
	struct tok *tok;
	double c0 = cpu_s(), w0 = mono_s();
	if (tok_load(file, &tok, err) < 0) {
		fprintf(stderr, "headroom tokenize: %s\n", err);
		return EXIT_USAGE;
	}
	double load_cpu = cpu_s() - c0, load_wall = mono_s() - w0;

	struct stats st = {0};
	unsigned flags = special ? TOK_ENC_SPECIAL : 0;
	int ex;
	if (decode) {
		ex = run_decode(tok);
	} else if (batch) {
		ex = run_batch(tok, flags, count, &st);
	} else {
		struct dynbuf in;
		dynbuf_init(&in, TOKENIZE_MAX_INPUT);
		struct tok_ids ids;
		tok_ids_init(&ids);
		ex = read_all(stdin, &in) < 0 ? EXIT_USAGE
		                              : encode_one(tok, in.data ? in.data : "", in.len,
		                                           flags, count, 0, &ids, &st);
		tok_ids_release(&ids);
		dynbuf_release(&in);
	}
	if (timing)
		fprintf(stderr,
		        "tokenizer %s (%s, %u ids): load %.3f s cpu %.3f s wall; encode %llu bytes "
		        "-> %llu tokens in %.3f s cpu %.3f s wall: %.2f MB/s per core\n",
		        file, tok_kind(tok), tok_vocab_size(tok), load_cpu, load_wall, st.bytes,
		        st.tokens, st.cpu, st.wall,
		        st.cpu > 0 ? (double)st.bytes / 1e6 / st.cpu : 0.0);
	tok_free(tok);
	if ((fflush(stdout) != 0 || ferror(stdout)) && ex == EXIT_OK) {
		fprintf(stderr, "headroom tokenize: cannot write to stdout: %s\n", strerror(errno));
		ex = EXIT_RUN_FAILED;
	}
	return ex;
}
