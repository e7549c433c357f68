/* log.h - headroomd's log: one line per event on standard error, as plain
 * text ("headroomd: MESSAGE", the default, as before), logfmt or JSON
 * lines, each with the time, level, component, the run it is about (when
 * the message names one) and the message (docs/operations.md, "Logs").
 * Levels below the one set are dropped. --log-format, --log-level and
 * --access-log set it (from the command line or the configuration file).
 */
#ifndef HR_LOG_H
#define HR_LOG_H

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_TEXT = 0, LOG_LOGFMT, LOG_JSON };

/* -1 when s names no level / format. */
int log_parse_level(const char *s);
int log_parse_format(const char *s);
/* Set once at start, before any thread. */
void log_setup(int format, int level, int access);
int log_access_enabled(void);

/* One event. component: the part of the daemon (runner, store, api, ...).
 * A message beginning "run N" is about run N (the run field). */
void hlog(int level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* One HTTP request (with --access-log): its id, client address, who (the
 * token's name or "local"), method, path, status and duration. */
void hlog_access(unsigned long long id, const char *client, const char *who, const char *method,
		 const char *path, unsigned status, double seconds);

#endif
