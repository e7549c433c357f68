/* wenv.c - the workers' environment (docs/security.md#secrets): the few
 * variables a worker needs, the daemon's pid, and the API key of a
 * declared secret, wiped when the run ends. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nvml.h"
#include "runner_int.h"
#include "secrets.h"
#include "util.h"

extern char **environ;

#define SECRET_MAX_BYTES 4096
#define SECRET_ENV "HEADROOM_TARGET_API_KEY"
#define PARENT_ENV "HEADROOM_PARENT_PID" /* worker/main.c: die with this process */

/* The workers' environment (docs/security.md#secrets): never the
 * daemon's whole one, which may hold anything; only the variables that
 * say how to run (PATH, HOME, TMPDIR, TZ, LANG, LC_*), the HEADROOM_*
 * ones a worker reads, the sanitizers' settings, PARENT_ENV (a worker
 * sets PR_SET_PDEATHSIG and checks its parent is still this process) and
 * the API key when there is one. */
static int env_kept(const char *e)
{
	static const char *const exact[] = {"PATH=",
	                                    "HOME=",
	                                    "TMPDIR=",
	                                    "TZ=",
	                                    "LANG=",
	                                    "LANGUAGE=",
	                                    "ASAN_OPTIONS=",
	                                    "UBSAN_OPTIONS=",
	                                    "LSAN_OPTIONS=",
	                                    "HEADROOM_WORKER_JSON=",
	                                    "HEADROOM_WORKER_BURN_US=",
	                                    "HEADROOM_WORKER_SPIN_US=",
	                                    "HEADROOM_WORKER_TRANSPORT=",
	                                    HR_NVML_ENV_LIB "="};
	for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
		if (strncmp(e, exact[i], strlen(exact[i])) == 0)
			return 1;
	return strncmp(e, "LC_", 3) == 0;
}

void wenv_build(struct run_ctx *c)
{
	size_t ne = 0;
	while (environ[ne])
		ne++;
	c->envp = xcalloc(ne + 3, sizeof *c->envp);
	size_t k = 0;
	for (size_t i = 0; i < ne; i++)
		if (env_kept(environ[i]))
			c->envp[k++] = environ[i];
	snprintf(c->parent_var, sizeof c->parent_var, "%s=%d", PARENT_ENV, (int)getpid());
	c->envp[k++] = c->parent_var;
	if (c->key_var)
		c->envp[k++] = c->key_var;
}

/* target.api_key_secret: a secret the operator declared (secrets.h),
 * whose hosts must include target.url's (checked at submission, and here
 * again: the declarations may have changed since). Its value goes to the
 * workers in their environment, as SECRET_ENV, which the spec they get
 * names as target.api_key_env. The stored spec keeps only the name.
 * A spec that names target.api_key_env itself (queued by an older
 * daemon) fails: only declared secrets reach a target.
 * Returns 0 or -1 with err. */
int wenv_resolve_secret(struct run_ctx *c, char *err)
{
	json_t *t = json_object_get(c->spec.json, "target");
	if (c->spec.target.api_key_env)
		return errf(err, "target.api_key_env: API keys come from declared secrets only: "
		                 "name one as 'target.api_key_secret'");
	const char *name = c->spec.target.api_key_secret;
	char msg[400];
	if (secrets_allow(c->r->o.secrets, name, json_string_value(json_object_get(t, "url")), msg,
	                  sizeof msg) < 0)
		return errf(err, "%s", msg);
	char buf[SECRET_MAX_BYTES + 1];
	if (secrets_read(c->r->o.secrets, name, buf, sizeof buf, msg, sizeof msg) < 0)
		return errf(err, "%s", msg);
	free(c->envp);
	c->envp = NULL;
	c->key_var = xasprintf("%s=%s", SECRET_ENV, buf);
	explicit_bzero(buf, sizeof buf);
	wenv_build(c);
	json_object_del(t, "api_key_secret");
	json_object_set_new(t, "api_key_env", json_string(SECRET_ENV));
	return 0;
}

void wenv_forget(struct run_ctx *c)
{
	if (c->key_var) {
		explicit_bzero(c->key_var, strlen(c->key_var));
		free(c->key_var);
	}
	free(c->envp);
	c->envp = NULL;
	c->key_var = NULL;
}

const char *wenv_key(const struct run_ctx *c)
{
	return c->key_var ? strchr(c->key_var, '=') + 1 : NULL;
}
