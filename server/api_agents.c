/* api_agents.c - the agents' routes (docs/agents.md, docs/api.md "Agents"):
 * GET /agents lists the enrolled agents with their live connections, POST
 * /agents enrolls a public key, DELETE /agents/{name} revokes one. */
#include <string.h>

#include "agents.h"
#include "apiint.h"
#include "auth.h"
#include "hrlimits.h"
#include "util.h"

enum MHD_Result h_agent_list(struct call *k)
{
	json_t *out;
	char err[HR_ERRLEN];
	if (agents_list(k->a->store, &out, err) < 0)
		return reply_internal(k->conn, err);
	return reply_json(k->conn, 200, out);
}

enum MHD_Result h_agent_enroll(struct call *k)
{
	json_error_t je;
	json_t *b = json_loadb(k->body, k->body_len, JSON_REJECT_DUPLICATES, &je);
	if (!b)
		return reply_error(k->conn, 400, "invalid_json", NULL, "the body is not JSON: %s",
		                   je.text);
	enum MHD_Result ret;
	if (!json_is_object(b)) {
		ret = reply_error(k->conn, 400, "wrong_type", NULL, "the body must be an object");
		goto out;
	}
	const char *key;
	json_t *v;
	json_object_foreach(b, key, v)
	{
		if (strcmp(key, "name") != 0 && strcmp(key, "public_key") != 0 &&
		    strcmp(key, "labels") != 0) {
			ret = reply_error(k->conn, 400, "unknown_field", key,
			                  "unknown member '%.64s'", key);
			goto out;
		}
	}
	static const char *const req[] = {"name", "public_key"};
	for (int i = 0; i < 2; i++) {
		json_t *x = json_object_get(b, req[i]);
		if (!x) {
			ret = reply_error(k->conn, 400, "missing_field", req[i], "'%s' is required",
			                  req[i]);
			goto out;
		}
		if (!json_is_string(x)) {
			ret = reply_error(k->conn, 400, "wrong_type", req[i],
			                  "'%s' must be a string", req[i]);
			goto out;
		}
	}
	json_t *labels = json_object_get(b, "labels");
	if (labels && !json_is_object(labels)) {
		ret = reply_error(k->conn, 400, "wrong_type", "labels",
		                  "'labels' must be an object of strings");
		goto out;
	}
	char err[HR_ERRLEN], field[32];
	json_t *out = NULL;
	int rc = agents_enroll(k->a->store, json_string_value(json_object_get(b, "name")),
	                       json_string_value(json_object_get(b, "public_key")), labels, &out,
	                       field, err);
	if (rc == -400)
		ret = reply_error(k->conn, 400, "invalid_value", field, "%s", err);
	else if (rc == -409)
		ret = reply_error(k->conn, 409, "conflict", field, "%s", err);
	else if (rc < 0)
		ret = reply_internal(k->conn, err);
	else {
		if (k->auth)
			snprintf(k->auth->detail, sizeof k->auth->detail, "agent %.64s enrolled",
			         json_string_value(json_object_get(b, "name")));
		ret = reply_json(k->conn, 201, out);
	}
out:
	json_decref(b);
	return ret;
}

enum MHD_Result h_agent_revoke(struct call *k)
{
	if (!agentproto_name_ok(k->name, AGENT_NAME_MAX))
		return reply_error(k->conn, 404, "not_found", "name", "no agent named '%.64s'",
		                   k->name);
	char err[HR_ERRLEN];
	int rc = agents_revoke(k->a->store, k->name, err);
	if (rc == -404)
		return reply_error(k->conn, 404, "not_found", "name", "no agent named '%s'",
		                   k->name);
	if (rc < 0)
		return reply_internal(k->conn, err);
	if (k->auth)
		snprintf(k->auth->detail, sizeof k->auth->detail, "agent %.64s revoked", k->name);
	struct MHD_Response *r = MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret = MHD_queue_response(k->conn, 204, r);
	MHD_destroy_response(r);
	return ret;
}
