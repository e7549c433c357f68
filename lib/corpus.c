/* corpus.c - the bundled corpus, included byte for byte by the assembler
 * (HR_CORPUS_FILE is set by CMake to data/corpus/kjv-genesis-exodus.txt),
 * so no file has to be installed beside the worker. */
#include "corpus.h"

#ifndef HR_CORPUS_FILE
#error "HR_CORPUS_FILE must name the corpus file (set by CMakeLists.txt)"
#endif

__asm__(".section .rodata\n"
	".balign 16\n"
	"hr_corpus_start:\n"
	".incbin \"" HR_CORPUS_FILE "\"\n"
	"hr_corpus_end:\n"
	".byte 0\n"
	".previous\n");

/* Local to this file's assembly; reached through their addresses. */
extern const char hr_corpus_start[] __asm__("hr_corpus_start");
extern const char hr_corpus_end[] __asm__("hr_corpus_end");

const char *corpus_text(size_t *len)
{
	*len = (size_t)(hr_corpus_end - hr_corpus_start);
	return hr_corpus_start;
}
