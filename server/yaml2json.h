/* yaml2json.h - a YAML document (GuideLLM's benchmarks.yaml) read with
 * libyaml into jansson values, so the JSON importers read it unchanged.
 *
 * Hostile input: one document only, nesting bounded, an alias a copy of
 * its complete anchored node, the copies of a document bounded in all (no
 * "billion laughs", no cycles), tags other than the core schema's refused, mapping keys scalars only, every string valid UTF-8.
 * Plain scalars resolve as PyYAML's safe_load does (what GuideLLM's own
 * reader uses): null, booleans, integers, floats; .inf and .nan, which
 * JSON cannot hold, become null (and sexagesimal numbers stay strings). The line of each node is kept for errors.
 */
#ifndef HR_YAML2JSON_H
#define HR_YAML2JSON_H

#include <jansson.h>
#include <stddef.h>

/* Lines of the nodes of a converted document, by node (1-based). */
struct yaml_lines {
	const void **keys;
	long *lines;
	size_t cap, n;
};

/* Converts text (len bytes). Returns the value (a new reference) with
 * lines filled (may be NULL: not kept), or NULL with *line (0 when not
 * about one) and msg set. max_depth bounds the nesting of sequences and
 * mappings. */
json_t *yaml_to_json(const char *text, size_t len, int max_depth, struct yaml_lines *lines,
		     long *line, char *msg, size_t msgsz);

/* The line of node v, 0 when unknown. */
long yaml_line_of(const struct yaml_lines *l, const void *v);
void yaml_lines_release(struct yaml_lines *l);

#endif
