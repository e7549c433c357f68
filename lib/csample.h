/* csample.h - one self-telemetry sample of a worker (PROTO_SAMPLE), shared
 * by the worker that builds it and the daemon that validates and stores it.
 *
 * A worker sends one about every HR_CLIENT_SAMPLE_NS while a phase runs,
 * and a last one when its last phase ends. Interval fields (cpu_ns,
 * busy_ns, wakeups, late[]) cover the time since the previous sample
 * (interval_ns); the others are the state at the sample (in_flight,
 * queued, ...) or totals since the run began (errors, sent, completed).
 *
 * Timer lateness is how long after its deadline the pacer's earliest due
 * deadline was handled, one observation per pacer wake-up with something
 * due, counted in the buckets of csample_late_edges_ns.
 */
#ifndef HR_CSAMPLE_H
#define HR_CSAMPLE_H

#include <jansson.h>
#include <stdint.h>

#define CSAMPLE_LATE_BUCKETS 9
/* The event loop's busy time per 100 ms window, as a histogram of windows
 * by busy fraction in tenths: bucket b holds windows busy [b/10, (b+1)/10),
 * the last one also those busy the whole window. */
#define CSAMPLE_WIN_BUCKETS 10
#define CSAMPLE_WIN_NS 100000000LL

/* Upper edges of the lateness buckets (the last one is open). */
extern const int64_t csample_late_edges_ns[CSAMPLE_LATE_BUCKETS - 1];

struct csample {
	int64_t t_ns;        /* ns since the run's t0 (the records' timeline) */
	int64_t interval_ns; /* time covered by the interval fields */
	int phase;           /* HR_PHASE_* running at the sample */
	int64_t cpu_ns;      /* process CPU time (user + system) in the interval */
	int64_t busy_ns;     /* event loop time outside the wait call in the interval */
	int64_t wakeups;     /* event loop wake-ups in the interval */
	int64_t late[CSAMPLE_LATE_BUCKETS]; /* pacer lateness histogram (interval) */
	int64_t late_max_ns; /* largest lateness in the interval */
	int64_t in_flight;   /* requests in flight */
	int64_t queued;      /* sends due by now but not made yet (incl. waiting for a slot) */
	int64_t queued_age_ns; /* how long the oldest of them has been due (0: none) */
	int64_t record_backlog; /* records finished but not yet handed to the socket */
	int64_t conn_errors; /* total: requests lost to connection and socket errors (could
	                      * not connect, reset, other transport failures) */
	int64_t port_errors; /* total: of those, local address/port exhaustion */
	int64_t sent, completed; /* totals */
	/* burst evidence (interval): how late stream reads were stamped after
	 * the loop could first have seen their socket ready, in the lateness
	 * buckets, and the largest; 100 ms windows by loop busy fraction */
	int64_t read_lag[CSAMPLE_LATE_BUCKETS];
	int64_t read_lag_max_ns;
	/* the same reads by their kernel lag: the stamp minus the kernel's
	 * receive time of the newest data they brought (native transport) */
	int64_t kern_lag[CSAMPLE_LATE_BUCKETS];
	int64_t kern_lag_max_ns;
	int64_t windows[CSAMPLE_WIN_BUCKETS];
};

/* The sample as a JSON object (a new reference). */
json_t *csample_to_json(const struct csample *s);
/* Parses and checks a sample from a worker (hostile input): every field
 * present, integers in range. Returns 0, or -1 with a message naming the
 * field in err (HR_ERRLEN). */
int csample_from_json(json_t *o, struct csample *s, char *err);
/* a + b for counts of samples (both >= 0), saturating at INT64_MAX: a
 * sample's fields are hostile input, each up to 2^62, and sums of them
 * (over buckets, samples, workers) must not overflow. */
int64_t csample_add(int64_t a, int64_t b);
/* Bucket of a lateness. */
int csample_late_bucket(int64_t late_ns);
/* Lateness (ns) below which a fraction q of the observations in h lie:
 * the upper edge of the bucket holding that quantile (INT64_MAX for the
 * open bucket), 0 when h is empty. */
int64_t csample_late_quantile(const int64_t h[CSAMPLE_LATE_BUCKETS], double q);

#endif
