/* agents.h - remote load hosts (docs/agents.md): enrolment of agents'
 * CURVE public keys, the daemon's agent socket (--agent-listen) with its
 * ZAP handler, the live table of connected agents, and the remote half of
 * the runner's worker pool.
 *
 * One thread (the hub) owns the ROUTER the agents connect to, the ZAP
 * socket and, per remote worker of the running run, a DEALER connected to
 * the run's own worker socket with the worker's routing id ("w<i>"): the
 * runner sees remote workers exactly as local ones, and the hub relays
 * frames between that DEALER and the agent. The runner and the API talk
 * to the hub only through the functions below (a mutex and an eventfd). */
#ifndef HR_AGENTS_H
#define HR_AGENTS_H

#include <jansson.h>
#include <stdint.h>

#include "agentproto.h"
#include "spec.h"
#include "store.h"

struct agents_opts {
	const char *listen; /* tcp://HOST:PORT */
	const char *key;    /* PREFIX: PREFIX.key is the daemon's secret key */
	const char *data_dir;
};

/* Starts the hub (once). 0, or -1 with err. */
int agents_start(struct store *s, const struct agents_opts *o, char *err);
/* Stops the hub and closes its sockets (no-op when never started). */
void agents_stop(void);

/* `headroomd agent enroll|list|revoke ...` and `headroomd keygen PREFIX`:
 * exit status. */
int agents_command(int argc, char **argv);
int agents_keygen_command(int argc, char **argv);

/* The API (admin for writes): enrolled agents with their live state;
 * enrolment (-400 bad input, -409 name or key taken, field names the
 * member); revocation (-404). 0 on success, -1 with err otherwise. */
int agents_list(struct store *s, json_t **out, char *err);
int agents_enroll(struct store *s, const char *name, const char *key, json_t *labels, json_t **out,
                  char *field, char *err);
int agents_revoke(struct store *s, const char *name, char *err);
/* labels "k=v,k=v" into an object; 0 or -1 with err */
int agents_parse_labels(const char *text, json_t *out, char *err);

/* --- the runner's remote pool ------------------------------------------------------- */

struct agent_pick {
	char conn[AGENT_NAME_MAX + 1]; /* the connection's announced name */
	int workers;
	char host[256], version[64]; /* as it announced them */
	int cores;
};

/* The connected agents a placement selects, in name order, with the
 * workers each runs. Returns the count, or -1 with why (no agent
 * connected matches a selector, more than max). */
int agents_place(const struct spec_placement *pl, struct agent_pick *out, int max, char *why);
/* Starts workers idx[0..n-1] of run on agent conn, relayed to the run's
 * worker socket endpoint; api_key (may be NULL) goes to their
 * environment; files (borrowed, may be NULL: {daemon path: SHA-256}) are
 * the run's files the agent may fetch by hash and caches (the dataset,
 * the tokenizer). 0, or -1 with err. */
int agents_spawn(int64_t run, const char *endpoint, const char *conn, const int *idx, int n,
                 const char *api_key, json_t *files, char *err);
/* The SHA-256 of a file in hex (65 bytes); 0 or -1. */
int agents_file_sha256(const char *path, char *hex);
enum { AGENT_W_RUNNING, AGENT_W_EXITED, AGENT_W_LOST };
/* Worker idx of run: AGENT_W_RUNNING, AGENT_W_EXITED (*status, its wait
 * status on the agent) or AGENT_W_LOST (why: its agent's link was lost). */
int agents_worker_state(int64_t run, int idx, int *status, char *why, size_t n);
/* The run is over: its agents kill what is left of its workers, and the
 * relays go. */
void agents_end_run(int64_t run);
/* the connection's name, host and address of a remote worker (card, summary); 0 or -1 */
int agents_worker_host(int64_t run, int idx, char *conn, size_t n);

#endif
