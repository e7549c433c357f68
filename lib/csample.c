/* csample.c - worker self-telemetry samples to and from JSON (csample.h). */
#include "csample.h"

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "util.h"

const int64_t csample_late_edges_ns[CSAMPLE_LATE_BUCKETS - 1] = {
    100000, 250000, 500000, 1000000, 2000000, 5000000, 10000000, 50000000,
};

int csample_late_bucket(int64_t late_ns)
{
	int b = 0;
	while (b < CSAMPLE_LATE_BUCKETS - 1 && late_ns >= csample_late_edges_ns[b])
		b++;
	return b;
}

int64_t csample_add(int64_t a, int64_t b)
{
	return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int64_t csample_late_quantile(const int64_t h[CSAMPLE_LATE_BUCKETS], double q)
{
	int64_t total = 0;
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		total = csample_add(total, h[b]);
	if (total == 0)
		return 0;
	/* the smallest bucket whose cumulative count reaches q of the total */
	double want = q * (double)total;
	int64_t cum = 0;
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS - 1; b++) {
		cum = csample_add(cum, h[b]);
		if ((double)cum >= want)
			return csample_late_edges_ns[b];
	}
	return INT64_MAX;
}

/* The plain integer fields, in wire order. */
static const struct {
	const char *name;
	size_t off;
} fields[] = {
#define F(x) {#x, offsetof(struct csample, x)}
    F(t_ns),	    F(interval_ns),    F(cpu_ns),	  F(busy_ns),	  F(wakeups),
    F(late_max_ns), F(in_flight),      F(queued),	  F(queued_age_ns),
    F(record_backlog), F(conn_errors), F(port_errors), F(sent),	  F(completed),
#undef F
};

static int64_t *field(struct csample *s, size_t i)
{
	return (int64_t *)(void *)((char *)s + fields[i].off);
}

/* n counts (0 .. 2^62) from the array a into out; -1 when not. */
static int counts(json_t *a, int n, int64_t *out)
{
	if (!json_is_array(a) || json_array_size(a) != (size_t)n)
		return -1;
	for (int b = 0; b < n; b++) {
		json_t *v = json_array_get(a, (size_t)b);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)1 << 62)
			return -1;
		out[b] = (int64_t)json_integer_value(v);
	}
	return 0;
}

json_t *csample_to_json(const struct csample *s)
{
	json_t *o = json_object();
	for (size_t i = 0; i < HR_ARRAY_LEN(fields); i++)
		json_object_set_new(o, fields[i].name,
				    json_integer((json_int_t)*field((struct csample *)s, i)));
	json_object_set_new(o, "phase", json_integer(s->phase));
	json_t *late = json_array();
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		json_array_append_new(late, json_integer((json_int_t)s->late[b]));
	json_object_set_new(o, "late", late);
	json_t *rl = json_array(), *win = json_array();
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		json_array_append_new(rl, json_integer((json_int_t)s->read_lag[b]));
	for (int b = 0; b < CSAMPLE_WIN_BUCKETS; b++)
		json_array_append_new(win, json_integer((json_int_t)s->windows[b]));
	json_object_set_new(o, "read_lag", rl);
	json_object_set_new(o, "read_lag_max_ns", json_integer((json_int_t)s->read_lag_max_ns));
	json_object_set_new(o, "windows", win);
	json_t *kl = json_array();
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++)
		json_array_append_new(kl, json_integer((json_int_t)s->kern_lag[b]));
	json_object_set_new(o, "kernel_lag", kl);
	json_object_set_new(o, "kernel_lag_max_ns", json_integer((json_int_t)s->kern_lag_max_ns));
	return o;
}

int csample_from_json(json_t *o, struct csample *s, char *err)
{
	*s = (struct csample){0};
	if (!json_is_object(o))
		return errf(err, "sample: not a JSON object");
	for (size_t i = 0; i < HR_ARRAY_LEN(fields); i++) {
		json_t *v = json_object_get(o, fields[i].name);
		if (!json_is_integer(v))
			return errf(err, "sample: '%s' must be an integer", fields[i].name);
		json_int_t x = json_integer_value(v);
		/* t_ns may be negative (a sample taken before t0); nothing else */
		if (x < (i == 0 ? -((json_int_t)1 << 62) : 0) || x > (json_int_t)1 << 62)
			return errf(err, "sample: '%s' out of range", fields[i].name);
		*field(s, i) = (int64_t)x;
	}
	json_t *ph = json_object_get(o, "phase");
	if (!json_is_integer(ph) || json_integer_value(ph) < 0 ||
	    json_integer_value(ph) >= HR_PHASE__COUNT)
		return errf(err, "sample: 'phase' must be 0 (warm-up) or 1 (profiling)");
	s->phase = (int)json_integer_value(ph);
	json_t *late = json_object_get(o, "late");
	if (!json_is_array(late) || json_array_size(late) != CSAMPLE_LATE_BUCKETS)
		return errf(err, "sample: 'late' must be an array of %d counts",
			    CSAMPLE_LATE_BUCKETS);
	for (int b = 0; b < CSAMPLE_LATE_BUCKETS; b++) {
		json_t *v = json_array_get(late, (size_t)b);
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > (json_int_t)1 << 62)
			return errf(err, "sample: 'late[%d]' must be a count", b);
		s->late[b] = (int64_t)json_integer_value(v);
	}
	/* the burst evidence: all five or none (none reads as zeros) */
	json_t *rl = json_object_get(o, "read_lag"), *rlm = json_object_get(o, "read_lag_max_ns");
	json_t *win = json_object_get(o, "windows");
	json_t *kl = json_object_get(o, "kernel_lag"), *klm = json_object_get(o, "kernel_lag_max_ns");
	if (rl || rlm || win || kl || klm) {
		if (counts(rl, CSAMPLE_LATE_BUCKETS, s->read_lag) < 0)
			return errf(err, "sample: 'read_lag' must be an array of %d counts",
				    CSAMPLE_LATE_BUCKETS);
		if (!json_is_integer(rlm) || json_integer_value(rlm) < 0 ||
		    json_integer_value(rlm) > (json_int_t)1 << 62)
			return errf(err, "sample: 'read_lag_max_ns' must be an integer in range");
		s->read_lag_max_ns = (int64_t)json_integer_value(rlm);
		if (counts(win, CSAMPLE_WIN_BUCKETS, s->windows) < 0)
			return errf(err, "sample: 'windows' must be an array of %d counts",
				    CSAMPLE_WIN_BUCKETS);
		if (counts(kl, CSAMPLE_LATE_BUCKETS, s->kern_lag) < 0)
			return errf(err, "sample: 'kernel_lag' must be an array of %d counts",
				    CSAMPLE_LATE_BUCKETS);
		if (!json_is_integer(klm) || json_integer_value(klm) < 0 ||
		    json_integer_value(klm) > (json_int_t)1 << 62)
			return errf(err, "sample: 'kernel_lag_max_ns' must be an integer in range");
		s->kern_lag_max_ns = (int64_t)json_integer_value(klm);
	}
	if (s->interval_ns == 0 && (s->cpu_ns || s->busy_ns))
		return errf(err, "sample: 'interval_ns' is 0 but the interval has CPU time");
	return 0;
}
