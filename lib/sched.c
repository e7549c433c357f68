/* sched.c - deterministic arrival schedules (see sched.h). */
#include "sched.h"

#include <math.h>

#include "rng.h"
#include "util.h"

/* Each arrival may need several random numbers (gamma rejection): draw
 * them from indices k * SUB + j of the stream. */
#define SUB 64

void sched_init(struct sched *s, int law, double rate, double smoothness, double ramp_s,
		uint64_t seed, uint64_t stream)
{
	s->law = law;
	s->rate = rate;
	s->smoothness = smoothness > 0 ? smoothness : 1;
	s->ramp_s = ramp_s > 0 ? ramp_s : 0;
	s->seed = seed;
	s->stream = stream;
	s->k = 0;
	s->s = 0;
	s->batch = 0;
	s->jitter_s = 0;
	s->last = 0;
}

void sched_set_batch(struct sched *s, int batch, double jitter_s)
{
	s->batch = batch > 1 ? batch : 0;
	s->jitter_s = jitter_s > 0 ? jitter_s : 0;
}

static double unif(uint64_t seed, uint64_t stream, uint64_t idx)
{
	double u = rng_uniform(seed, stream, idx);
	return u > 0 ? u : 0x1.0p-54; /* (0, 1) */
}

/* Marsaglia and Tsang's method; shape < 1 via the boost gamma(a+1) * U^(1/a). */
double sched_gamma(uint64_t seed, uint64_t stream, uint64_t index, double shape)
{
	uint64_t base = index * SUB;
	uint64_t j = 0;
	double boost = 1;
	if (shape < 1) {
		boost = pow(unif(seed, stream, base + j++), 1.0 / shape);
		shape += 1;
	}
	double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
	while (j + 3 < SUB) {
		/* a normal from two uniforms (Box-Muller) */
		double u1 = unif(seed, stream, base + j++), u2 = unif(seed, stream, base + j++);
		double x = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
		double v = 1 + c * x;
		if (v <= 0)
			continue;
		v = v * v * v;
		double u = unif(seed, stream, base + j++);
		if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
			return d * v * boost;
	}
	return d * boost; /* practically unreachable: ~20 rejections in a row */
}

/* Interval number k of a process at `rate`. */
static double interval(const struct sched *s, uint64_t k, double rate)
{
	switch (s->law) {
	case SCHED_CONSTANT:
		return 1.0 / rate;
	case SCHED_POISSON:
		return -log(unif(s->seed, s->stream, k * SUB)) / rate;
	default:
		return sched_gamma(s->seed, s->stream, k, s->smoothness) / (s->smoothness * rate);
	}
}

/* Operational time -> time since the phase start (the ramp). */
static double wall_of(const struct sched *s, double op)
{
	if (s->ramp_s > 0 && op < s->ramp_s / 2)
		return sqrt(2.0 * s->ramp_s * op);
	return op + s->ramp_s / 2;
}

int64_t sched_next(struct sched *s)
{
	if (s->batch > 1) {
		uint64_t b = s->k / (uint64_t)s->batch, j = s->k % (uint64_t)s->batch;
		if (j == 0 && s->k > 0)
			s->s += interval(s, b - 1, s->rate / s->batch);
		double t = wall_of(s, s->s);
		/* the last of the stream's SUB indices: never a gamma draw */
		if (s->jitter_s > 0)
			t += s->jitter_s * ((double)j + unif(s->seed, s->stream, s->k * SUB + SUB - 1)) /
			     s->batch;
		s->k++;
		int64_t ns = ns_of_s(t);
		if (ns < s->last)
			ns = s->last;
		s->last = ns;
		return ns;
	}
	double t = wall_of(s, s->s);
	s->s += interval(s, s->k, s->rate);
	s->k++;
	return ns_of_s(t); /* clamped: t grows without bound at tiny rates */
}
