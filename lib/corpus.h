/* corpus.h - the public-domain text compiled into the programs that
 * synthesise prompts (data/corpus/README.md). */
#ifndef HR_CORPUS_H
#define HR_CORPUS_H

#include <stddef.h>

/* The corpus (UTF-8, NUL-terminated) and its length in bytes. */
const char *corpus_text(size_t *len);

#endif
