/* main.c - headroomd: options, start-up order, signals, shutdown order.
 *
 * Start: store (migrations, recovery of interrupted runs with their
 * summaries) -> runner thread (stale sockets removed) -> HTTP API. Stop
 * (SIGINT/SIGTERM): API first (no new work), then the runner (a run in
 * progress ends 'interrupted' with its records kept), then the store
 * (every queued write is committed). The stop is bounded: a second signal,
 * or SHUTDOWN_LIMIT_S without finishing, exits at once (docs/operations.md).
 */
#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agents.h"
#include "api.h"
#include "auth.h"
#include "backup.h"
#include "config.h"
#include "resummary.h"
#include "runner.h"
#include "sdnotify.h"
#include "netallow.h"
#include "runs.h"
#include "calibrate.h"
#include "datasets.h"
#include "disk.h"
#include "log.h"
#include "store.h"
#include "summary.h"
#include "sweep.h"
#include "util.h"

static void usage(FILE *f)
{
	fputs("usage: headroomd [--listen HOST:PORT] [--data DIR] [options]\n"
	      "       headroomd token create|list|revoke ... (API tokens; token --help)\n"
	      "       headroomd summarize [--data DIR] RUN_ID (a run's summary from its\n"
	      "       stored records; summarize --help)\n"
	      "       headroomd backup [--data DIR] DEST (an online backup; backup --help)\n"
	      "       headroomd restore [--data NEWDIR] BACKUP (check and restore one)\n"
	      "       headroomd agent enroll|list|revoke ... (load-host agents; agent --help)\n"
	      "       headroomd keygen PREFIX (the key pair of --agent-key)\n"
	      "\n"
	      "  --listen HOST:PORT   address of the REST API (default 127.0.0.1:8080;\n"
	      "                       port 0 picks a free port)\n"
	      "  --data DIR           directory of the SQLite store (default ./headroom-data)\n"
	      "  --worker-bin PATH    headroom-worker to launch (default: beside headroomd)\n"
	      "  --worker-prefix 'CMD ARGS'\n"
	      "                       run each worker as CMD ARGS WORKER...: words split at\n"
	      "                       spaces, CMD found on the PATH, and it must exec the\n"
	      "                       worker (taskset -c 2-3, nice -n 5, numactl ...)\n"
	      "  --secret NAME=env:VAR@HOST[,HOST...]\n"
	      "  --secret NAME=file:PATH@HOST[,HOST...]\n"
	      "                       declares secret NAME for target.api_key_secret: its\n"
	      "                       value is the daemon's variable VAR or the file PATH\n"
	      "                       (mode 600, one line), sent only to the hosts listed\n"
	      "                       (HOST: any port; HOST:PORT: that port). Repeatable\n"
	      "  --mock-bin PATH      headroom-mock for runs with target.mock and for\n"
	      "                       calibrations (default: beside headroomd)\n"
	      "  --transport ipc|tcp  how workers connect (default ipc)\n"
	      "  --agent-listen tcp://HOST:PORT  take enrolled headroom-agents there\n"
	      "                       (CURVE; off by default; docs/agents.md)\n"
	      "  --agent-key PREFIX   the daemon's key pair for it (PREFIX.key)\n"
	      "  --default-workers N  workers per run when a spec gives none\n"
	      "                       (default: number of CPU cores)\n"
	      "  --nvml-lib PATH      NVML library for GPU telemetry (default: $HEADROOM_NVML_LIB,\n"
	      "                       else libnvidia-ml.so.1); runs go on without it\n"
	      "  --retain-days N      delete finished, unpinned runs older than N days\n"
	      "                       (no baseline's runs; default 0: keep all)\n"
	      "  --retain-per-fingerprint N\n"
	      "                       keep only the newest N runs of each spec fingerprint\n"
	      "                       (same exceptions; default 0: no limit)\n"
	      "  --max-connections N  HTTP connections at once, in total (default 256)\n"
	      "  --max-connections-per-client N\n"
	      "                       HTTP connections at once from one client address\n"
	      "                       (default 32); more are closed unanswered\n"
	      "  --max-queued-runs N  POST /runs answers 503 queue_full past N queued runs\n"
	      "                       (default 1000)\n"
	      "  --reader-wait-ms N   longest wait of a request for a database reader before\n"
	      "                       it is answered 503 busy (default 1000)\n"
	      "  --readers N          SQLite readers for API requests and the daemon's threads\n"
	      "                       (default 8)\n"
	      "  --export-readers N   SQLite readers for streamed exports (default 8); an\n"
	      "                       export that finds none free is answered 503 busy\n"
	      "  --min-free-mb N      a run starts only with at least N MiB free on the\n"
	      "                       data directory; below it /healthz says degraded\n"
	      "                       (default 256; 0: no floor)\n"
	      "  --summary-memory-mb N  memory one run's summary may use for its values\n"
	      "                       (default 256); a larger run is summarised in passes\n"
	      "                       over its records, with the same exact figures\n"
	      "  --config FILE        read options from FILE first (key = value lines, the\n"
	      "                       keys being these options without --; docs/operations.md)\n"
	      "  --check-config       check the configuration and options, then exit\n"
	      "  --log-format F       text (default: \"headroomd: message\"), logfmt or json\n"
	      "                       (time, level, component, run, message per line)\n"
	      "  --log-level L        debug, info (default), warn or error\n"
	      "  --access-log         a log line per HTTP request (id, client, who, method,\n"
	      "                       path, status, duration)\n"
	      "  --no-migration-copy  migrate an older database without keeping a copy of\n"
	      "                       it first (headroom.db.before-NNN)\n"
	      "  --backup-dir DIR     where POST /api/v1/backups writes (default DATA/backups)\n"
	      "  --require-tokens     every /api/v1 route but GET /healthz needs a token\n"
	      "                       (implied once a token was ever made, and beyond\n"
	      "                       loopback; otherwise a loopback daemon is open)\n"
	      "  --tls-cert FILE, --tls-key FILE\n"
	      "                       serve HTTPS with this PEM certificate and key;\n"
	      "                       required to listen beyond loopback\n"
	      "  --insecure-plaintext listen beyond loopback WITHOUT TLS: tokens and data\n"
	      "                       cross the network in the clear (docs/security.md)\n"
	      "  --allowed-host NAME  a Host the API answers (repeatable; NAME or NAME:PORT;\n"
	      "                       default the --listen host, and on loopback also\n"
	      "                       localhost, 127.0.0.1 and [::1]; NAME: at any port)\n"
	      "  --allow-target ENTRY the targets and telemetry URLs runs may connect to\n"
	      "                       (repeatable): ADDR, ADDR/LEN, NAME or [IPv6], each with\n"
	      "                       an optional :PORT or :LOW-HIGH; checked on the resolved\n"
	      "                       address at connect time. Without it a loopback daemon\n"
	      "                       allows all but link-local and metadata addresses and\n"
	      "                       its own API, one beyond loopback allows nothing\n"
	      "                       (docs/security.md, \"Targets\")\n"
	      "  --list-routes        print the API routes and exit\n"
	      "  --version, --help\n",
	      f);
}

/* After the first SIGINT/SIGTERM, how long the orderly stop may take
 * before the daemon exits anyway (docs/operations.md). The run in progress
 * needs at most its STOP grace (3 s), the wait for workers that finished
 * (2 s), the mock's stop (2 s) and its summary. */
#define SHUTDOWN_LIMIT_S 20
#define EXIT_SECOND_SIGNAL_BASE 128 /* exit status 128 + the second signal */
#define EXIT_SHUTDOWN_TIMEOUT 3

/* Watches the orderly stop: a second signal or the time limit ends the
 * process at once (_exit: no more writes; committed data is safe in the
 * WAL, and the next start recovers a run left 'running'). */
static void *shutdown_watch(void *arg)
{
	const sigset_t *set = arg;
	struct timespec limit = {SHUTDOWN_LIMIT_S, 0};
	siginfo_t si;
	for (;;) {
		int sig = sigtimedwait(set, &si, &limit);
		if (sig > 0) {
			hlog(LOG_WARN, "main", "second signal %d, exiting at once\n", sig);
			_exit(EXIT_SECOND_SIGNAL_BASE + sig);
		}
		if (errno == EINTR)
			continue; /* limit is not updated: at worst a little late */
		hlog(LOG_WARN, "main", "shutdown took over %d s, exiting at once\n",
			SHUTDOWN_LIMIT_S);
		_exit(EXIT_SHUTDOWN_TIMEOUT);
	}
	return NULL;
}

static char *beside_self(const char *name)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return xstrdup(name);
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	return xasprintf("%s/%s", self, name);
}

/* The daemon's own API address (HOST:PORT or [HOST]:PORT, as bound) goes
 * into the allow-list as refused; a daemon beyond loopback with no
 * --allow-target allows no target at all. */
static int allow_self(struct netallow *allow, const char *address)
{
	char host[300];
	const char *colon = strrchr(address, ':');
	if (!colon || (size_t)(colon - address) >= sizeof host)
		return -1;
	size_t n = (size_t)(colon - address);
	memcpy(host, address, n);
	host[n] = '\0';
	char *h = host;
	if (h[0] == '[' && n >= 2 && h[n - 1] == ']') {
		h[n - 1] = '\0';
		h++;
	}
	int port = atoi(colon + 1);
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (getaddrinfo(h, NULL, &hints, &ai) != 0)
		return -1;
	int loopback = 1;
	for (struct addrinfo *p = ai; p; p = p->ai_next) {
		netallow_add_self(allow, p->ai_addr, port);
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)p->ai_addr;
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)p->ai_addr;
		if (p->ai_family == AF_INET ? (ntohl(s4->sin_addr.s_addr) >> 24) != 127
					    : !IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
			loopback = 0;
	}
	freeaddrinfo(ai);
	if (!loopback && allow->n == 0) {
		allow->closed = true;
		hlog(LOG_WARN, "main", "WARNING: listening beyond loopback without "
				"--allow-target: every target is refused (docs/security.md)\n");
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct netallow allow; /* --allow-target, the daemon's own address */
	const char *listen = "127.0.0.1:8080", *data = "headroom-data", *transport = "ipc";
	const char *nvml_lib = NULL;
	char *worker_bin = NULL, *mock_bin = NULL, *data_abs = NULL;
	const char *worker_prefix = NULL;
	struct secrets secrets = {0};
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	int default_workers = ncpu > 0 ? (int)ncpu : 1;
	int retain_days = 0, retain_per_fp = 0;
	long long min_free_mb = HR_MIN_FREE_MB_DEFAULT;
	const char *backup_dir = NULL;
	const char *agent_listen = NULL, *agent_key = NULL; /* docs/agents.md */
	char *backup_default = NULL;
	int log_format = LOG_TEXT, log_level = LOG_INFO, log_access = 0;
	struct api_opts ao = {.listen = NULL}; /* the bounds: 0 takes hrlimits.h's default */
	struct store_opts so = {0};
	if (argc > 1 && strcmp(argv[1], "token") == 0)
		return auth_token_command(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "agent") == 0)
		return agents_command(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "keygen") == 0)
		return agents_keygen_command(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "summarize") == 0)
		return resummary_command(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "backup") == 0)
		return backup_command(argc - 2, argv + 2);
	if (argc > 1 && strcmp(argv[1], "restore") == 0)
		return restore_command(argc - 2, argv + 2);
	/* the configuration file's options first (--config, config.h), then
	 * the command line's: where an option takes one value, the command
	 * line wins */
	struct config_args ca = {0};
	int check_config = 0;
	config_add(&ca, argv[0], NULL);
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc && config_load(argv[++i], &ca) < 0) {
			config_free(&ca);
			return 2;
		}
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
			i++;
		else if (strcmp(argv[i], "--check-config") == 0)
			check_config = 1;
		else
			config_add(&ca, argv[i], NULL);
	}
	int cur = 0; /* the argument being read, for the error of a bad one */
	int early_rc = 2; /* the status of an exit before the daemon starts */
	for (int i = 1; i < ca.argc; i++) {
		cur = i;
		const char *a = ca.argv[i];
		const char *v = i + 1 < ca.argc ? ca.argv[i + 1] : NULL;
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage(stdout);
			early_rc = 0;
			goto options_exit;
		} else if (strcmp(a, "--version") == 0) {
			puts("headroomd " HEADROOM_VERSION " (" HEADROOM_COMMIT ")");
			early_rc = 0;
			goto options_exit;
		} else if (strcmp(a, "--list-routes") == 0) {
			api_list_routes(stdout);
			early_rc = 0;
			goto options_exit;
		} else if (strcmp(a, "--no-migration-copy") == 0) {
			so.no_migration_copy = 1;
			continue;
		} else if (strcmp(a, "--access-log") == 0) {
			log_access = 1;
			continue;
		} else if (strcmp(a, "--require-tokens") == 0 ||
			   strcmp(a, "--insecure-plaintext") == 0) {
			*(a[2] == 'r' ? &ao.auth.require_tokens : &ao.auth.insecure_plaintext) = 1;
			continue;
		} else if (!v) {
			fprintf(stderr, "headroomd: %s needs a value (or is unknown)\n", a);
			usage(stderr);
			goto bad_option;
		} else if (strcmp(a, "--listen") == 0) {
			listen = v;
		} else if (strcmp(a, "--log-format") == 0 || strcmp(a, "--log-level") == 0) {
			int fmt_opt = a[6] == 'f';
			int x = fmt_opt ? log_parse_format(v) : log_parse_level(v);
			if (x < 0) {
				fprintf(stderr, "headroomd: %s must be %s\n", a,
					fmt_opt ? "text, logfmt or json" : "debug, info, warn or error");
				goto bad_option;
			}
			*(fmt_opt ? &log_format : &log_level) = x;
		} else if (strcmp(a, "--backup-dir") == 0) {
			backup_dir = v;
		} else if (strcmp(a, "--agent-listen") == 0) {
			if (strncmp(v, "tcp://", 6) != 0 || strlen(v) > 200) {
				fprintf(stderr, "headroomd: --agent-listen must be tcp://HOST:PORT\n");
				goto bad_option;
			}
			agent_listen = v;
		} else if (strcmp(a, "--agent-key") == 0) {
			agent_key = v;
		} else if (strcmp(a, "--tls-cert") == 0 || strcmp(a, "--tls-key") == 0) {
			*(a[6] == 'c' ? &ao.auth.tls_cert : &ao.auth.tls_key) = v;
		} else if (strcmp(a, "--allowed-host") == 0) {
			if (ao.auth.n_allowed_hosts == AUTH_MAX_HOSTS || !*v || strlen(v) > 255) {
				fprintf(stderr, "headroomd: at most %d --allowed-host, each 1 to 255 "
						"characters\n", AUTH_MAX_HOSTS);
				goto bad_option;
			}
			ao.auth.allowed_hosts[ao.auth.n_allowed_hosts++] = v;
		} else if (strcmp(a, "--allow-target") == 0) {
			char aerr[HR_ERRLEN];
			if (netallow_add(&allow, v, aerr) < 0) {
				fprintf(stderr, "headroomd: --allow-target: %s\n", aerr);
				goto bad_option;
			}
		} else if (strcmp(a, "--nvml-lib") == 0) {
			nvml_lib = v;
		} else if (strcmp(a, "--data") == 0) {
			data = v;
		} else if (strcmp(a, "--worker-bin") == 0) {
			free(worker_bin);
			worker_bin = xstrdup(v);
		} else if (strcmp(a, "--worker-prefix") == 0) {
			if (!*v || strlen(v) > 1024) {
				fprintf(stderr, "headroomd: --worker-prefix: 1 to 1024 characters\n");
				goto bad_option;
			}
			worker_prefix = v;
		} else if (strcmp(a, "--secret") == 0) {
			char serr[400];
			if (secrets_add(&secrets, v, serr, sizeof serr) < 0) {
				fprintf(stderr, "headroomd: %s\n", serr);
				secrets_free(&secrets);
				free(worker_bin);
				free(mock_bin);
				goto bad_option;
			}
		} else if (strcmp(a, "--secrets-dir") == 0) {
			fprintf(stderr, "headroomd: --secrets-dir is gone: declare each secret with its "
					"hosts, --secret NAME=file:DIR/NAME@HOST (docs/security.md)\n");
			goto bad_option;
		} else if (strcmp(a, "--mock-bin") == 0) {
			free(mock_bin);
			mock_bin = xstrdup(v);
		} else if (strcmp(a, "--transport") == 0) {
			if (strcmp(v, "ipc") != 0 && strcmp(v, "tcp") != 0) {
				fprintf(stderr, "headroomd: --transport must be ipc or tcp\n");
				goto bad_option;
			}
			transport = v;
		} else if (strcmp(a, "--retain-days") == 0 ||
			   strcmp(a, "--retain-per-fingerprint") == 0) {
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || n < 0 || n > 1000000) {
				fprintf(stderr, "headroomd: %s must be 0..1000000\n", a);
				goto bad_option;
			}
			if (strcmp(a, "--retain-days") == 0)
				retain_days = (int)n;
			else
				retain_per_fp = (int)n;
		} else if (strcmp(a, "--max-connections") == 0 ||
			   strcmp(a, "--max-connections-per-client") == 0 ||
			   strcmp(a, "--max-queued-runs") == 0 || strcmp(a, "--reader-wait-ms") == 0 ||
			   strcmp(a, "--readers") == 0 || strcmp(a, "--export-readers") == 0) {
			char *end;
			long n = strtol(v, &end, 10), max = strstr(a, "readers") ? 64 : 1000000;
			if (*end || n < 1 || n > max) {
				fprintf(stderr, "headroomd: %s must be 1..%ld\n", a, max);
				goto bad_option;
			}
			*(strcmp(a, "--max-connections") == 0	       ? &ao.max_connections
			  : strcmp(a, "--max-queued-runs") == 0	       ? &ao.max_queued_runs
			  : strcmp(a, "--reader-wait-ms") == 0	       ? &ao.reader_wait_ms
			  : strcmp(a, "--readers") == 0		       ? &so.readers
			  : strcmp(a, "--export-readers") == 0	       ? &so.exports
								       : &ao.max_connections_per_client) = (int)n;
		} else if (strcmp(a, "--min-free-mb") == 0) {
			char *end;
			long long n = strtoll(v, &end, 10);
			if (*end || end == v || n < 0 || n > 1000000000LL) {
				fprintf(stderr, "headroomd: --min-free-mb must be 0..1000000000\n");
				goto bad_option;
			}
			min_free_mb = n;
		} else if (strcmp(a, "--summary-memory-mb") == 0) {
			char *end;
			long long n = strtoll(v, &end, 10);
			if (*end || end == v || n < 1 || n > 1048576) {
				fprintf(stderr, "headroomd: --summary-memory-mb must be 1..1048576\n");
				goto bad_option;
			}
			summary_set_memory((size_t)n << 20);
		} else if (strcmp(a, "--default-workers") == 0) {
			char *end;
			long n = strtol(v, &end, 10);
			if (*end || n < 1 || n > 256) {
				fprintf(stderr, "headroomd: --default-workers must be 1..256\n");
				goto bad_option;
			}
			default_workers = (int)n;
		} else {
			fprintf(stderr, "headroomd: unknown option %s\n", a);
			usage(stderr);
			goto bad_option;
		}
		i++;
	}
	log_setup(log_format, log_level, log_access);
	goto options_read;
bad_option:
	if (ca.origin[cur])
		fprintf(stderr, "headroomd: (that option is set in %s)\n", ca.origin[cur]);
options_exit: /* help, version, a bad option: what the options held is freed */
	free(worker_bin);
	free(mock_bin);
	secrets_free(&secrets);
	config_free(&ca);
	return early_rc;
options_read:
	if (!worker_bin)
		worker_bin = beside_self("headroom-worker");
	if (!mock_bin)
		mock_bin = beside_self("headroom-mock");
	if (access(worker_bin, X_OK) != 0) {
		fprintf(stderr, "headroomd: worker program %s is not executable: %s\n", worker_bin,
			strerror(errno));
		early_rc = 1;
		goto options_exit;
	}
	if (!agent_listen != !agent_key) {
		fprintf(stderr, "headroomd: --agent-listen and --agent-key go together (the "
				"daemon's key pair: headroomd keygen PREFIX)\n");
		goto options_exit;
	}
	if (check_config) {
		printf("headroomd: the configuration and command line are valid\n");
		early_rc = 0;
		goto options_exit;
	}

	/* Signals: block them in every thread, wait for them here. */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT); /* before any thread: it is not thread-safe */

	char err[HR_ERRLEN];
	struct store *store = NULL;
	struct runner *runner = NULL;
	struct api *api = NULL;
	int status = 1;
	if (store_open(data, &so, &store, err) < 0) {
		hlog(LOG_ERROR, "main", "%s\n", err);
		goto out;
	}
	/* runs a crashed daemon left 'running' end 'interrupted' with a
	 * summary of what was stored; runs_recover takes any left after that */
	int n = runner_recover(store, default_workers, err);
	if (n < 0)
		hlog(LOG_ERROR, "main", "cannot recover interrupted runs: %s\n", err);
	int n2 = runs_recover(store, err);
	if (n2 < 0) {
		hlog(LOG_ERROR, "main", "%s\n", err);
		goto out;
	}
	/* uploads a crash interrupted, files no dataset reads */
	int n3 = datasets_recover(store, err);
	if (n3 < 0)
		hlog(LOG_ERROR, "main", "cannot clean the datasets folder: %s\n", err);
	else if (n3 > 0)
		hlog(LOG_INFO, "main", "removed %d file(s) a crash left in the datasets folder\n",
			n3);
	/* imported files no imported run names (a deleted run's, a crash's) */
	char *imports = xasprintf("%s/imports", data_abs ? data_abs : data);
	int n4 = store_files_recover(store, imports, ".tmp-",
				     "SELECT 1 FROM run_imports WHERE sha256 = ?1 OR "
				     "jsonl_sha256 = ?1 LIMIT 1",
				     "imports", err);
	free(imports);
	if (n4 < 0)
		hlog(LOG_ERROR, "main", "cannot clean the imports folder: %s\n", err);
	else if (n4 > 0)
		hlog(LOG_INFO, "main", "removed %d file(s) no imported run names from the imports "
			"folder\n", n4);
	if (n > 0 || n2 > 0)
		hlog(LOG_INFO, "main", "%d run(s) were running when the daemon last stopped; "
				"marked interrupted\n",
			(n > 0 ? n : 0) + n2);
	calib_settle_all(store); /* calibrations whose last run was interrupted */
	sweep_settle_all(store); /* sweeps waiting on a run that was interrupted */
	/* workers connect to an ipc socket in the data directory: use its
	 * absolute path so the endpoint does not depend on anyone's cwd */
	data_abs = realpath(data, NULL);
	disk_configure(data_abs ? data_abs : data, min_free_mb);
	if (disk_reserve_make(err) < 0) /* made again before each run */
		hlog(LOG_WARN, "main", "%s\n", err);
	struct runner_opts ro = {.data_dir = data_abs ? data_abs : data,
				 .worker_bin = worker_bin,
				 .worker_prefix = worker_prefix,
				 .transport = transport,
				 .default_workers = default_workers,
				 .nvml_lib = nvml_lib,
				 .mock_bin = mock_bin,
				 .secrets = &secrets,
				 .retain_days = retain_days,
				 .retain_per_fp = retain_per_fp,
				 .allow = &allow};
	if (agent_listen) {
		struct agents_opts ag = {.listen = agent_listen, .key = agent_key,
					 .data_dir = data_abs ? data_abs : data};
		if (agents_start(store, &ag, err) < 0) {
			hlog(LOG_ERROR, "main", "%s\n", err);
			goto out;
		}
	}
	if (runner_start(store, &ro, &runner, err) < 0) {
		hlog(LOG_ERROR, "main", "%s\n", err);
		goto out;
	}
	ao.listen = listen;
	backup_default = xasprintf("%s/backups", data_abs ? data_abs : data);
	ao.backup_dir = backup_dir ? backup_dir : backup_default;
	ao.default_workers = default_workers;
	ao.secrets = &secrets;
	ao.allow = &allow;
	if (api_start(store, runner, &ao, &api, err) < 0) {
		hlog(LOG_ERROR, "main", "%s\n", err);
		goto out;
	}
	if (allow_self(&allow, api_address(api)) < 0) {
		hlog(LOG_ERROR, "main", "cannot resolve my own address %s\n", api_address(api));
		goto out;
	}
	runner_allow_ready(runner);
	printf("headroomd listening on %s://%s (data %s)\n", ao.auth.tls_cert ? "https" : "http",
	       api_address(api), store_path(store));
	fflush(stdout);
	char ready[400];
	snprintf(ready, sizeof ready, "READY=1\nSTATUS=listening on %.300s", api_address(api));
	if (sd_notify_send(ready) < 0)
		hlog(LOG_ERROR, "main", "could not tell systemd it is ready ($NOTIFY_SOCKET)\n");

	int sig = 0;
	sigwait(&set, &sig);
	hlog(LOG_INFO, "main", "signal %d, shutting down (a second one exits at once)\n",
		sig);
	sd_notify_send("STOPPING=1\nSTATUS=stopping");
	static sigset_t watch_set;
	watch_set = set;
	pthread_t watch;
	if (pthread_create(&watch, NULL, shutdown_watch, &watch_set) == 0)
		pthread_detach(watch);
	status = 0;
out:
	api_free(api);
	runner_free(runner);
	agents_stop();
	store_free(store);
	free(worker_bin);
	free(mock_bin);
	secrets_free(&secrets);
	free(data_abs);
	free(backup_default);
	config_free(&ca);
	curl_global_cleanup();
	return status;
}
