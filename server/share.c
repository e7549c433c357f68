/* share.c - the SCHEDULE message for a worker: its share of each phase
 * (lib/split.c), its class, the dataset, the targets allowed (share.h). */
#include "share.h"

#include <arpa/inet.h>
#include <stdio.h>

#include "dataset.h"
#include "rng.h"
#include "split.h"

/* One phase's share for worker i (api/protocol.md, "SCHEDULE payload").
 * req_offset separates the warm-up's request indices from the run's. */
static json_t *phase_share(const struct spec_load *ld, int i, int n, int stream,
                           long long req_offset)
{
	json_t *p = json_object();
	json_object_set_new(p, "mode", json_string(spec_mode_name(ld->mode)));
	json_object_set_new(p, "duration_s", json_real(ld->duration_s));
	json_object_set_new(p, "ramp_s", json_real(ld->ramp_s));
	long long base = req_offset, stride = 1, req = 0;
	if (ld->mode == SPEC_LOAD_CONCURRENCY) {
		int conc = ld->concurrency;
		int slots = (int)split_even(conc, n, i);
		if (ld->requests > 0) {
			/* proportional to slots, exact in sum (lib/split.h) */
			int64_t b0, cnt;
			split_requests(ld->requests, conc, n, i, &b0, &cnt);
			base += b0;
			req = cnt;
		} else {
			base += i;
			stride = n;
		}
		json_object_set_new(p, "slots", json_integer(slots));
		json_object_set_new(p, "total_slots", json_integer(conc));
	} else {
		/* rate and trace: a ceiling per worker (0 = none); the global
		 * request limit travels as is, each worker taking its arrivals */
		json_object_set_new(
		    p, "slots",
		    json_integer(ld->max_concurrency ? split_even(ld->max_concurrency, n, i) : 0));
		json_object_set_new(p, "total_slots", json_integer(ld->max_concurrency));
		req = ld->requests;
		if (ld->mode == SPEC_LOAD_RATE)
			json_object_set_new(p, "rate",
			                    json_pack("{s:s, s:f, s:f, s:f, s:i, s:I, s:f}", "law",
			                              spec_arrival_name(ld->arrival), "rate",
			                              ld->rate, "smoothness", ld->smoothness,
			                              "ramp_s", ld->ramp_s, "stream", stream,
			                              "total_requests", (json_int_t)ld->requests,
			                              "duration_s", ld->duration_s));
		if (ld->mode == SPEC_LOAD_RATE && ld->batch_size > 0) {
			json_t *rt = json_object_get(p, "rate");
			json_object_set_new(rt, "batch_size", json_integer(ld->batch_size));
			json_object_set_new(rt, "jitter_s", json_real(ld->batch_jitter_s));
		}
	}
	json_object_set_new(p, "requests", json_integer(req));
	json_object_set_new(p, "req_id_base", json_integer(base));
	json_object_set_new(p, "req_id_stride", json_integer(stride));
	json_object_set_new(p, "worker", json_integer(i));
	json_object_set_new(p, "workers", json_integer(n));
	return p;
}

/* share.net (api/protocol.md): the allow-list as given, and the daemon's
 * own addresses. */
static json_t *net_share(const struct netallow *a)
{
	json_t *allow = json_array(), *self = json_array();
	for (int k = 0; k < a->n; k++)
		json_array_append_new(allow, json_string(a->e[k].text));
	for (int k = 0; k < a->n_self; k++) {
		char txt[INET6_ADDRSTRLEN], buf[INET6_ADDRSTRLEN + 10];
		inet_ntop(a->self[k].family, a->self[k].addr, txt, sizeof txt);
		snprintf(buf, sizeof buf, a->self[k].family == AF_INET6 ? "[%s]:%d" : "%s:%d", txt,
		         a->self[k].port);
		json_array_append_new(self, json_string(buf));
	}
	return json_pack("{s:o, s:o, s:b}", "allow", allow, "self", self, "closed", a->closed);
}

json_t *share_schedule(const struct share_in *in, int gi)
{
	/* with classes, worker gi is worker i of its class's pool of n */
	const struct spec *sp = in->spec;
	int k = spec_class_of_worker(sp, (uint32_t)gi), i = gi, n = in->workers;
	long long off = 0;
	if (k >= 0) {
		i = gi - sp->classes[k].first_worker;
		n = sp->classes[k].workers;
		off = (long long)k * CLASS_REQ_OFFSET;
		sp = sp->classes[k].spec;
	}
	int dk = k < 0 ? 0 : k;
	json_t *share = phase_share(&sp->load, i, n, RNG_STREAM_ARRIVAL, off);
	json_object_set_new(share, "grace_s", json_real(sp->grace_s));
	json_object_set_new(share, "cancel",
	                    json_pack("{s:f, s:f}", "fraction", sp->cancel_fraction, "after_s",
	                              sp->cancel_after_s));
	if (sp->workload.sessions)
		json_object_set_new(share, "sessions",
		                    json_pack("{s:{s:f, s:f}, s:{s:f, s:f}}", "turns", "mean",
		                              sp->workload.turns.mean, "stddev",
		                              sp->workload.turns.stddev, "think_time_s", "mean",
		                              sp->workload.think_s.mean, "stddev",
		                              sp->workload.think_s.stddev));
	if (sp->load.mode == SPEC_LOAD_TRACE)
		json_object_set_new(share, "trace",
		                    json_pack("{s:f, s:f, s:f}", "speedup", sp->speedup, "start_s",
		                              sp->trace_start_s, "end_s", sp->trace_end_s));
	if (in->ds[dk]) {
		static const char *const sampling[] = {"", "sequential", "random", "shuffle"};
		const struct dataset_ref *ds = in->ds[dk];
		int sm = sp->workload.sampling;
		if (sm == SPEC_SAMPLE_DEFAULT) /* a random pool is drawn from; the rest walked */
			sm = ds->format == DS_RANDOM_POOL ? SPEC_SAMPLE_RANDOM
			                                  : SPEC_SAMPLE_SEQUENTIAL;
		json_object_set_new(share, "dataset",
		                    json_pack("{s:s, s:s, s:o, s:s, s:I}", "path", ds->path,
		                              "format", ds_format_name(ds->format), "options",
		                              ds_options_json(ds->format, &ds->opts), "sampling",
		                              sampling[sm], "entries", (json_int_t)ds->entries));
	}
	if (sp->has_warmup)
		json_object_set_new(share, "warmup",
		                    phase_share(&sp->warmup, i, n, RNG_STREAM_WARMUP_ARRIVAL,
		                                WARMUP_REQ_OFFSET + off));
	json_object_set_new(share, "net", net_share(in->net));
	json_t *msg =
	    json_pack("{s:I, s:i, s:i, s:O, s:o}", "run_id", (json_int_t)in->run_id, "worker", gi,
	              "workers", in->workers, "spec", sp->json, "share", share);
	if (k >= 0) /* the class's pool: the share's worker and workers are its own */
		json_object_set_new(msg, "class",
		                    json_pack("{s:s, s:i, s:i, s:I}", "name",
		                              in->spec->classes[k].name, "worker", i, "workers", n,
		                              "req_offset", (json_int_t)off));
	return msg;
}
