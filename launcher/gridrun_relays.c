/*
 * What gridrun asks the running relays over HTTP (their /status,
 * docs/gridrelay.md), or the sites' services in their stead: whether every
 * link is up before the ranks start, and once a site's ranks ended,
 * whether every one of them joined the grid.
 */
#include "gridrun_http.h"
#include "gridrun_json.h"
#include "gridrun_run.h"
#include "gridrun_service.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define RELAY_UP_TIMEOUT_MS 20000
#define JOIN_QUERY_TRIES    3
/* A relay that accepts but never answers must not stall the loop. */
#define STATUS_TIMEOUT_S 1
#define STATUS_MAX_BYTES (16u << 20)

struct site_ref {
    const struct gr_job *job;
    const struct gr_site *site;
};

static int open_site_socket(void *arg, int family)
{
    const struct site_ref *ref = arg;
    return gr_site_socket(ref->job, ref->site, family);
}

char *gr_relay_status(const struct gr_job *job, const struct gr_site *s)
{
    char endpoint[MF_HOST_MAX + 16], err[256], *body = NULL;
    struct site_ref ref = {job, s};
    gr_relayconf_http(s, endpoint, sizeof(endpoint));
    const struct gr_http_request req = {
        .endpoint = endpoint,
        .host = "127.0.0.1",
        .method = "GET",
        .path = "/status",
        .timeout_s = STATUS_TIMEOUT_S,
        .max_reply = STATUS_MAX_BYTES,
        .open_socket = open_site_socket,
        .socket_arg = &ref,
    };
    if (gr_http_request(&req, &body, err, sizeof(err)) != 200) {
        free(body);
        return NULL;
    }
    return body;
}

/* Every link "up" with all of its streams up, and one link per peer: a
 * key scan of each link's object, as gridrun_json.h reads the rest. */
static bool links_up(const char *json, uint32_t peers)
{
    uint32_t seen = 0;
    const char *p = json;
    while ((p = strstr(p, "{\"peer\":\"")) != NULL) {
        p++;
        const char *state = strstr(p, "\"state\":\"");
        const char *up = strstr(p, "\"streams_up\":");
        const char *all = strstr(p, "\"streams\":");
        if (state == NULL || up == NULL || all == NULL)
            return false;
        if (strncmp(state + 9, "up\"", 3) != 0 ||
            atoi(up + 13) != atoi(all + 10) || atoi(all + 10) < 1)
            return false;
        seen++;
    }
    return seen == peers;
}

void gr_relay_died(const struct gr_site *s, const char *when)
{
    char what[64];
    gr_describe_status(s->relay_status, what, sizeof(what));
    fprintf(stderr, "gridrun: relay of site %s died %s (%s); see %s\n", s->name,
            when, what, s->log);
}

/* Ask every relay not known up yet: how many are; -1 when one died. */
static int relays_up(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    int ready = 0;
    for (uint32_t i = 0; i < job->site_count; i++) {
        struct gr_site *s = &job->sites[i];
        if (!s->relay_running) {
            gr_relay_died(s, "while starting");
            return -1;
        }
        if (!s->relay_up) {
            char *body = gr_relay_status(job, s);
            s->relay_up = body != NULL && links_up(body, job->site_count - 1);
            free(body);
        }
        ready += s->relay_up;
    }
    return ready;
}

int gr_relays_wait_up(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = gr_now_ms() + RELAY_UP_TIMEOUT_MS;
    for (;;) {
        int ready = relays_up(r);
        if (ready < 0) {
            r->reason = GR_END_ERROR;
            return -1;
        }
        if (ready == (int)job->site_count) {
            gr_vlog(job, "all relays up");
            return 0;
        }
        if (gr_now_ms() >= deadline) {
            for (uint32_t i = 0; i < job->site_count; i++) {
                if (!job->sites[i].relay_up) {
                    fprintf(stderr,
                            "gridrun: relay of site %s: links not up after "
                            "%d s; see %s\n",
                            job->sites[i].name, RELAY_UP_TIMEOUT_MS / 1000,
                            job->sites[i].log);
                    break;
                }
            }
            r->reason = GR_END_ERROR;
            return -1;
        }
        gr_pump(r, 50);
        if (r->reason != GR_END_NONE)
            return -1;
    }
}

/* Every site's service has the job once the peer services confirmed it
 * to each other (docs/gridrelay.md, "Service mode"). */
int gr_services_wait_ready(struct gr_runner *r)
{
    struct gr_job *job = r->job;
    int64_t deadline = gr_now_ms() + RELAY_UP_TIMEOUT_MS;
    for (;;) {
        int ready = gr_service_all_ready(job);
        if (ready == 1) {
            gr_vlog(job, "the job is ready at every site's service");
            return 0;
        }
        if (ready < 0 || gr_now_ms() >= deadline) {
            if (ready == 0)
                fprintf(stderr,
                        "gridrun: the sites' services did not confirm the "
                        "job to each other within %d s (are their links "
                        "up? see their /status)\n",
                        RELAY_UP_TIMEOUT_MS / 1000);
            r->reason = GR_END_ERROR;
            return -1;
        }
        gr_pump(r, 20); /* a poll is one HTTPS request per site */
        if (r->reason != GR_END_NONE)
            return -1;
    }
}

/*
 * The join check.  A rank joins the grid in MPI_Init, when libgridcoll's
 * session with the site's relay authenticates; the relay keeps a record of
 * every rank that ever did (docs/gridrelay.md, /status).  A program whose MPI
 * calls never reach libgridcoll (Fortran mpi_f08, libgridcoll not linked in,
 * MPI-4 sessions, no MPI_Init at all) runs as one MPI job per site instead of
 * one grid job, and may well exit 0: so once a site's mpiexec has ended, every
 * rank of the site must have joined.
 */

/* Ask site s's relay which of its ranks ever joined: 0 with
 * s->ranks_joined and s->never_joined set, -1 when the relay does not
 * answer or says nothing about joins (a gridrelay older than gridrun). */
static int query_joined(struct gr_runner *r, struct gr_site *s)
{
    int status = -1;
    char *body = NULL;
    for (int i = 0; i < JOIN_QUERY_TRIES && body == NULL; i++) {
        if (i > 0)
            gr_pump(r, 100);
        body = r->job->services ? gr_service_job_status(r->job, s)
                                : gr_relay_status(r->job, s);
    }
    if (body == NULL)
        goto cleanup;
    size_t len = 0;
    const char *joined = gr_json_value(body, "ranks_joined");
    const char *never = gr_json_string(body, "ranks_never_joined", &len);
    if (joined == NULL || never == NULL)
        goto cleanup;
    s->never_joined = strndup(never, len);
    if (s->never_joined == NULL)
        goto cleanup;
    s->ranks_joined = strtoll(joined, NULL, 10);
    status = 0;
cleanup:
    free(body);
    return status;
}

/* Check, once its mpiexec has ended on its own, that every rank of site s
 * joined the grid; when not, the job ends with GR_END_NOT_JOINED.  Ranks end
 * only after their relay answered their AUTH (the relay records the join
 * first), so the record is complete by the time mpiexec is reaped. */
void gr_check_joined(struct gr_runner *r, struct gr_site *s)
{
    struct gr_job *job = r->job;
    if (s->join_checked)
        return;
    s->join_checked = true;
    /* With one site libgridcoll leaves everything to MPICH and never
     * calls the relay; --native runs no relays.  A site's gateway service
     * records joins per job as a per-job relay does. */
    if (job->no_join_check || job->native || job->site_count < 2 ||
        (s->relay_pid <= 0 && !job->services))
        return;
    bool exited_0 = WIFEXITED(s->mpi_status) && WEXITSTATUS(s->mpi_status) == 0;
    if (query_joined(r, s) != 0) {
        /* A relay that died is reported as such while ranks run; a failed
         * mpiexec fails the job anyway. */
        if (exited_0 && job->services)
            fprintf(stderr,
                    "gridrun: warning: site %s: cannot tell whether its ranks "
                    "joined the grid: its service's /jobs/%u does not say\n",
                    s->name, job->job_id);
        else if (exited_0 && s->relay_running)
            fprintf(stderr,
                    "gridrun: warning: site %s: cannot tell whether its ranks "
                    "joined the grid: its relay's /status does not say; see "
                    "%s\n",
                    s->name, s->log);
        return;
    }
    gr_vlog(job, "site %s: %" PRId64 " of %u ranks joined the grid", s->name,
            s->ranks_joined, s->count);
    if (s->ranks_joined >= (int64_t)s->count && s->never_joined[0] == '\0')
        return;
    /* A failed mpiexec some of whose ranks did join is a rank's failure:
     * hydra ends the rest, maybe before they joined. */
    if (!exited_0 && s->ranks_joined > 0)
        return;
    s->join_failed = true;
    if (r->reason == GR_END_NONE) {
        r->reason = GR_END_NOT_JOINED;
        r->failed_site = s;
    }
}
