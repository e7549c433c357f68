/* hrlimits.h - every bound on buffers, queues and outside input, in one place.
 *
 * A size that comes from outside the process (an API body, a spec field, a
 * streamed response, a worker message, a dataset) is checked against one of
 * these before anything is allocated for it. Change a bound here, document
 * it in docs/limits.md, and the code follows.
 */
#ifndef HR_LIMITS_H
#define HR_LIMITS_H

/* REST API */
#define HR_MAX_BODY_BYTES (1u << 20)      /* largest accepted request body: 1 MiB -> 413 */
#define HR_MAX_PAGE_LIMIT 1000            /* GET /runs?limit= upper bound */
#define HR_DEFAULT_PAGE_LIMIT 50

/* run spec */
#define HR_MAX_NAME_LEN 256
#define HR_MAX_URL_LEN 2048
#define HR_MAX_PATH_LEN 4096              /* a file path in a spec (workload.tokenizer) */
#define HR_MAX_PREFIX_PROMPTS 100000      /* workload.prefix_prompts.count */
#define HR_MAX_MIX 64                     /* workload.mix entries */
#define HR_MAX_SLOS 16                    /* goodput objectives */
#define HR_MAX_TOOL_TIMES 8               /* workload.sessions.tool_time_s components */
#define HR_MAX_CLASSES 8                  /* traffic classes of one run (spec.classes) */
#define HR_MAX_CLASS_NAME 32              /* bytes of a class's name */
#define HR_MAX_BATCH_SIZE 4096            /* load.batch.size */
#define HR_MAX_GATES 32                   /* gates of one spec */
#define HR_MAX_REPEAT 100                 /* repeat.count */
#define HR_MAX_SERIES_ANSWER (1u << 30)   /* bytes of one GET /series answer */
#define HR_MAX_TS_BUCKETS 10000           /* buckets of one GET /runs/{id}/timeseries */
#define HR_TS_AUTO_BUCKETS 500            /* ... when the step is the daemon's choice */
#define HR_MAX_DIST_POINTS 10000          /* CDF points of one GET /runs/{id}/distribution */
#define HR_MAX_LABELS 64
#define HR_MAX_LABEL_LEN 256
#define HR_MAX_NOTE_LEN 4096               /* a run's free-text note */
#define HR_MAX_HEADERS 64
#define HR_MAX_WORKERS 256
#define HR_MAX_PLACEMENT 8 /* placement.agents entries */
#define HR_MAX_CONCURRENCY 100000
#define HR_MAX_REQUESTS 100000000LL
#define HR_MAX_DURATION_S (7 * 24 * 3600.0)
#define HR_MAX_ISL 1000000
#define HR_MAX_OSL 1000000
#define HR_MAX_TIMEOUT_S 3600.0
#define HR_MAX_RATE 1000000.0             /* requests per second */
#define HR_MAX_RAMP_S 86400.0
#define HR_MIN_SMOOTHNESS 0.001           /* gamma shape k */
#define HR_MAX_SMOOTHNESS 1000.0
#define HR_MIN_SPEEDUP 0.000001           /* trace replay speed factor */
#define HR_MAX_SPEEDUP 1000000.0
#define HR_MAX_TRACE_OFFSET_S 1e9         /* trace start_s / end_s */
#define HR_MAX_GRACE_S 3600.0
#define HR_MAX_TURNS 1000                 /* turns per session */
#define HR_MAX_THINK_S 3600.0
#define HR_MAX_TRACE_ENTRIES 1000000
#define HR_MAX_TRACE_HASH_IDS 100000      /* hash_ids of one trace line */

/* telemetry */
#define HR_MIN_TELEMETRY_INTERVAL_MS 50
#define HR_MAX_TELEMETRY_INTERVAL_MS 60000
#define HR_MAX_SCRAPE_URLS 16             /* dcgm_urls and metrics_urls, each */
#define HR_MAX_SCRAPE_BYTES (8u << 20)    /* one scrape body (prom.h agrees) */
#define HR_MAX_TELEMETRY_GPUS 64

/* streamed responses (worker side) */
#define HR_MAX_SSE_LINE (1u << 20)        /* one SSE line: longer is malformed_stream */
#define HR_MAX_SSE_EVENT (4u << 20)       /* one event's accumulated data */
#define HR_MAX_RESPONSE_BYTES (64u << 20) /* a non-streamed body */
#define HR_MAX_RESPONSE_HEAD (64u << 10)  /* a response's status line and header fields
                                          * (native transport): more is a transport error */
#define HR_MAX_CHUNKS_PER_REQUEST 1000000u
#define HR_MAX_ERROR_MSG 512

/* worker protocol */
#define HR_MAX_PROTO_MSG (16u << 20)      /* one ZeroMQ frame */
#define HR_MAX_RECORDS_PER_BATCH 4096u
#define HR_RECORD_BATCH_FLUSH_NS 50000000LL /* worker ships records at least every 50 ms */
#define HR_HEARTBEAT_NS 250000000LL       /* worker heartbeat period */
#define HR_WORKER_SILENCE_NS 5000000000LL /* a worker silent this long is declared lost */
#define HR_CLIENT_SAMPLE_NS 1000000000LL  /* worker and daemon self-telemetry period */
/* Requests one worker holds in flight in a rate or trace run that sets no
 * load.max_concurrency: past a few thousand connections to one host,
 * libcurl's connection lookup per new request grows with their number and
 * an overloaded worker would stall (docs/client.md). Arrivals past it
 * wait, which shows as schedule lag and makes the run client_bound. */
#define HR_WORKER_MAX_IN_FLIGHT 2048
#define HR_WORKER_HELLO_NS 10000000000LL  /* time allowed for all workers to say hello */
#define HR_ZMQ_HWM 10000                  /* messages queued per ZeroMQ socket */

/* datasets (lib/dataset.h, docs/datasets.md) */
#define HR_MAX_DATASET_BYTES (256u << 20) /* one uploaded dataset file -> 413 */
#define HR_MAX_DATASET_ENTRIES 1000000    /* requests (turns) kept from one dataset */
#define HR_MAX_DATASET_LINE (8u << 20)    /* one JSONL line, one ShareGPT array element */
#define HR_MAX_DATASET_TEXT (4u << 20)    /* one prompt, reply or system prompt, in bytes */
#define HR_MAX_DATASET_EXTRA (64u << 10)  /* one entry's 'extra' object, as compact JSON */
#define HR_MAX_DATASET_SESSION_ID 256     /* bytes of a session_id or ShareGPT id */
#define HR_MAX_DATASET_TIME_MS 1e12       /* a 'timestamp' or 'delay', in milliseconds */
#define HR_MAX_DATASET_PREVIEW 100        /* GET /datasets/{id}/entries?limit= upper bound */
#define HR_DATASET_PREVIEW_TEXT 4096      /* bytes of each text shown in a preview */
#define HR_DATASET_PREVIEW_HASH_IDS 1024  /* hash_ids of one entry shown in a preview */

/* imports of other tools' result files (server/import.h, docs/formats.md) */
#define HR_MAX_IMPORT_BYTES (64u << 20)   /* one POST /imports body -> 413 */
#define HR_MAX_IMPORT_RECORDS 1000000     /* requests of one imported file */
#define HR_MAX_IMPORT_DEPTH 32            /* nesting of arrays and objects in an imported file */
#define HR_MAX_IMPORT_UNMAPPED (64u << 10) /* one unmapped member kept with the run, as JSON */
#define HR_MAX_IMPORT_BENCHMARKS 1000     /* benchmarks of one GuideLLM report */
#define HR_MAX_IMPORT_CHUNKS (16u << 20)  /* chunks laid out for one GuideLLM report's requests */
#define HR_MAX_YAML_ALIASED 1000000u      /* nodes the aliases of one YAML file copy, in all */
#define HR_MAX_YAML_ANCHORS 10000u        /* anchors of one YAML file */

/* daemon */
#define HR_STORE_QUEUE_MAX 1024           /* writer commands waiting; producers block beyond */
#define HR_READ_POOL_SIZE 8               /* SQLite read connections: API handlers, daemon threads */
#define HR_EXPORT_POOL_SIZE 8             /* SQLite read connections of streamed exports -> 503 */
#define HR_READER_WAIT_MS 1000            /* default --reader-wait-ms: a request's wait for a reader -> 503 */
#define HR_RETRY_AFTER_S 1                /* Retry-After of a 503 busy */
#define HR_MAX_CONNECTIONS 256            /* default --max-connections: HTTP connections in total */
#define HR_MAX_CONNECTIONS_PER_CLIENT 32  /* default --max-connections-per-client: per client address */
#define HR_MAX_QUEUED_RUNS 1000           /* default --max-queued-runs: queued runs -> 503 queue_full */
#define HR_QUEUE_RETRY_AFTER_S 60         /* Retry-After of a 503 queue_full */
#define HR_MAX_LIVE_STREAMS 16            /* GET /runs/{id}/live streams open at once -> 503 busy */
#define HR_LIVE_MAX_S 900                 /* one live stream's lifetime (the browser reconnects) */
#define HR_LIVE_HEARTBEAT_S 10            /* a live stream's comment line when it has nothing to say */

/* mock server */
#define HR_MOCK_MAX_CONNS 65536
#define HR_MOCK_MAX_REQUEST_BYTES (16u << 20) /* multimodal bodies carry their media */

#endif
