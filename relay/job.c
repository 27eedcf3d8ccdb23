/*
 * Jobs: who may use the relay, and between which ranks.
 *
 * A per-job relay serves the one job of its configuration.  A service
 * (docs/gridrelay.md, "Service mode") serves the jobs launchers register
 * through the control endpoint (control.c) and shares one link per peer
 * site between them.  Both sides of a link must know a job before its
 * ranks may use it: a relay announces every job it is given to the job's
 * other sites in a JOB frame (docs/protocol.md §9), and a job is READY once
 * every peer site announced the same job (same token hash, same sites with
 * the same rank ranges).  gridrun starts ranks only when every site's
 * service says READY.
 *
 * Ending a job (launcher's DELETE, an expired lease, a peer site that
 * withdrew it or was lost, a service stopping) fails its sessions with the
 * reason, drops what was queued for its ranks, and withdraws it from the
 * peers; chunks still in flight keep the struct alive (job_ref) but are
 * dropped where they land.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "gc_log.h"
#include "relay.h"

/*
 * Announcements that came before the job was registered here: gridrun
 * registers the sites one after the other, so a peer's JOB frame often
 * arrives first.  Kept until the registration or for the longest lease.
 */
struct early_announce {
    struct link *link;
    uint32_t id;
    uint64_t expires_ns;
    struct gc_job_frame frame;
    TAILQ_ENTRY(early_announce) entry;
};

/* ---- allocation ------------------------------------------------------- */

static struct job *job_alloc(struct relay *relay, uint32_t id,
                             uint32_t first_rank, uint32_t rank_count)
{
    struct job *job = calloc(1, sizeof *job);
    if (job == NULL)
        return NULL;
    job->slots = calloc(rank_count ? rank_count : 1, sizeof *job->slots);
    if (job->slots == NULL) {
        free(job);
        return NULL;
    }
    job->relay = relay;
    job->refs = 1; /* the table's */
    job->id = id;
    job->first_rank = first_rank;
    job->rank_count = rank_count;
    job->registered_ns = gc_now_ns();
    for (uint32_t i = 0; i < rank_count; i++) {
        job->slots[i].job = job;
        job->slots[i].rank = first_rank + i;
        TAILQ_INIT(&job->slots[i].pending);
        TAILQ_INIT(&job->slots[i].waiters);
    }
    return job;
}

static int job_add_peer(struct job *job, const char *name, uint32_t first_rank,
                        uint32_t rank_count, struct link *link)
{
    struct job_peer *jp = &job->peers[job->peer_count];
    snprintf(jp->name, sizeof jp->name, "%s", name);
    jp->first_rank = first_rank;
    jp->rank_count = rank_count;
    jp->link = link;
    drr_queue_init(&jp->sched);
    jp->credit_consumed = calloc(rank_count, sizeof(uint64_t));
    jp->credit_returned = calloc(rank_count, sizeof(uint64_t));
    jp->returned_total = calloc(job->rank_count + 1, sizeof(uint64_t));
    jp->returned_sent = calloc(job->rank_count + 1, sizeof(uint64_t));
    job->peer_count++; /* job_free releases whatever was allocated */
    if (jp->credit_consumed == NULL || jp->credit_returned == NULL ||
        jp->returned_total == NULL || jp->returned_sent == NULL)
        return -1;
    return 0;
}

static void drop_pending(struct job *job)
{
    for (uint32_t i = 0; i < job->rank_count; i++) {
        struct chunk *c;
        while ((c = TAILQ_FIRST(&job->slots[i].pending)) != NULL) {
            TAILQ_REMOVE(&job->slots[i].pending, c, entry);
            chunk_unref(c);
        }
    }
}

static void job_free(struct job *job)
{
    for (uint32_t i = 0; i < job->peer_count; i++) {
        struct job_peer *jp = &job->peers[i];
        free(jp->credit_consumed);
        free(jp->credit_returned);
        free(jp->returned_total);
        free(jp->returned_sent);
    }
    free(job->slots);
    gc_secret_wipe(job->token, sizeof job->token);
    free(job);
}

void job_ref(struct job *job)
{
    job->refs++;
}

void job_unref(struct job *job)
{
    if (--job->refs == 0)
        job_free(job);
}

static void job_insert(struct relay *relay, struct job *job)
{
    TAILQ_INSERT_TAIL(&relay->jobs, job, entry);
    relay->job_count++;
}

/* ---- lookups ---------------------------------------------------------- */

struct job *job_find(struct relay *relay, uint32_t id)
{
    struct job *job;
    TAILQ_FOREACH(job, &relay->jobs, entry)
    if (job->id == id)
        return job;
    return NULL;
}

struct rank_slot *job_local_slot(struct job *job, uint32_t rank)
{
    if (rank < job->first_rank || rank - job->first_rank >= job->rank_count)
        return NULL;
    return &job->slots[rank - job->first_rank];
}

struct job_peer *job_peer_for_rank(struct job *job, uint32_t rank)
{
    for (uint32_t i = 0; i < job->peer_count; i++) {
        struct job_peer *jp = &job->peers[i];
        if (rank >= jp->first_rank && rank - jp->first_rank < jp->rank_count)
            return jp;
    }
    return NULL;
}

struct job_peer *job_peer_on_link(struct job *job, const struct link *link)
{
    for (uint32_t i = 0; i < job->peer_count; i++)
        if (job->peers[i].link == link)
            return &job->peers[i];
    return NULL;
}

/* ---- announcements ---------------------------------------------------- */

static void send_job_frame(struct link *link, uint32_t id,
                           const struct gc_job_frame *frame)
{
    uint8_t payload[GC_MAX_CONTROL_PAYLOAD];
    size_t len = gc_job_frame_encode(frame, payload, sizeof payload);
    if (len == 0) {
        gc_log_error("job %u: cannot encode a JOB frame for link %s", id,
                     link->peer->name);
        return;
    }
    struct gc_frame_header h = {
        .type = GC_FRAME_JOB, .job_id = id, .payload_len = (uint32_t)len};
    link_send_control(link, &h, payload);
}

/* Every site of the job, ours first. */
static void describe_sites(const struct job *job, struct gc_job_frame *frame)
{
    const struct relay_config *cfg = job->relay->cfg;
    frame->site_count = (uint8_t)(job->peer_count + 1);
    snprintf(frame->sites[0].name, sizeof frame->sites[0].name, "%s",
             cfg->site_name);
    frame->sites[0].first_rank = job->first_rank;
    frame->sites[0].rank_count = job->rank_count;
    for (uint32_t i = 0; i < job->peer_count; i++) {
        struct gc_job_site *site = &frame->sites[i + 1];
        snprintf(site->name, sizeof site->name, "%s", job->peers[i].name);
        site->first_rank = job->peers[i].first_rank;
        site->rank_count = job->peers[i].rank_count;
    }
}

static void announce(struct job *job, struct job_peer *jp)
{
    if (jp->link->state != LINK_UP)
        return; /* job_announce_all runs when it comes up */
    struct gc_job_frame frame = {.op = GC_JOB_ANNOUNCE,
                                 .job_credit =
                                     job->relay->cfg->service_job_memory};
    memcpy(frame.token_hash, job->token_hash, GC_JOB_HASH_SIZE);
    describe_sites(job, &frame);
    send_job_frame(jp->link, job->id, &frame);
}

void job_announce_all(struct link *link)
{
    struct job *job;
    TAILQ_FOREACH(job, &link->relay->jobs, entry)
    {
        struct job_peer *jp = job_peer_on_link(job, link);
        if (jp != NULL && job->lease_ns != 0)
            announce(job, jp);
    }
}

/* Does `frame` describe the job `mine` and `token_hash` describe: the same
 * token, the same sites with the same ranges, in any order?  On a mismatch
 * `why` says what differs. */
static int same_job(const struct gc_job_frame *mine, const uint8_t *token_hash,
                    const struct gc_job_frame *frame, char *why, size_t why_len)
{
    if (memcmp(frame->token_hash, token_hash, GC_JOB_HASH_SIZE) != 0) {
        snprintf(why, why_len, "a different job token");
        return 0;
    }
    if (mine->site_count != frame->site_count) {
        snprintf(why, why_len, "%u sites, here %u", frame->site_count,
                 mine->site_count);
        return 0;
    }
    for (unsigned i = 0; i < frame->site_count; i++) {
        const struct gc_job_site *a = &frame->sites[i], *b = NULL;
        for (unsigned j = 0; j < mine->site_count && b == NULL; j++)
            if (strcmp(mine->sites[j].name, a->name) == 0)
                b = &mine->sites[j];
        if (b == NULL || a->first_rank != b->first_rank ||
            a->rank_count != b->rank_count) {
            snprintf(why, why_len, "site %s with ranks %u..%u", a->name,
                     a->first_rank, a->first_rank + a->rank_count - 1);
            return 0;
        }
    }
    return 1;
}

static void confirm(struct job *job, struct job_peer *jp)
{
    if (jp->confirmed)
        return;
    jp->confirmed = 1;
    jp->conflict[0] = '\0';
    /* Our own announcement may have reached the peer while another job
     * held the id there (refused, not kept): say it again, once. */
    announce(job, jp);
    for (uint32_t i = 0; i < job->peer_count; i++)
        if (!job->peers[i].confirmed)
            return;
    job->state = JOB_READY;
    gc_log_info("job %u (%s): ready, every site has it", job->id, job->owner);
}

/*
 * A peer announced a job with our job's id.  A different job under the
 * same id (another launcher's, by accident or on purpose) must not end
 * ours: a job's fate is its own launcher's and its own ranks' to decide.
 * Ours stays unconfirmed at that site, with the conflict shown to its
 * launcher (GET /jobs/ID), which registers again under another id.
 */
static void take_announce(struct job *job, struct link *link,
                          const struct gc_job_frame *frame)
{
    struct job_peer *jp = job_peer_on_link(job, link);
    char why[120];
    if (jp == NULL) {
        gc_log_warn("job %u: site %s announced it, but it is not one of "
                    "the job's sites here",
                    job->id, link->peer->name);
        return;
    }
    struct gc_job_frame mine = {0};
    describe_sites(job, &mine);
    if (!same_job(&mine, job->token_hash, frame, why, sizeof why)) {
        snprintf(jp->conflict, sizeof jp->conflict,
                 "site %s has another job %u (%s)", link->peer->name, job->id,
                 why);
        gc_log_warn("job %u (%s): %s; this one stays unconfirmed there",
                    job->id, job->owner, jp->conflict);
        return;
    }
    jp->job_credit = frame->job_credit;
    confirm(job, jp);
}

static void forget_early(struct relay *relay, struct early_announce *e)
{
    TAILQ_REMOVE(&relay->early_announces, e, entry);
    free(e);
}

static void keep_early(struct link *link, uint32_t id,
                       const struct gc_job_frame *frame)
{
    struct relay *relay = link->relay;
    const struct relay_config *cfg = relay->cfg;
    struct early_announce *e, *next;
    unsigned count = 0;
    for (e = TAILQ_FIRST(&relay->early_announces); e != NULL; e = next) {
        next = TAILQ_NEXT(e, entry);
        if (e->link == link && e->id == id)
            forget_early(relay, e);
        else
            count++;
    }
    /* Bounded: a peer cannot make us hold more than a full table's worth. */
    if (count >= cfg->service_max_jobs * (cfg->peer_count + 1u)) {
        gc_log_warn("link %s: too many announcements of unknown jobs; "
                    "dropping job %u's",
                    link->peer->name, id);
        return;
    }
    e = calloc(1, sizeof *e);
    if (e == NULL)
        return;
    e->link = link;
    e->id = id;
    e->frame = *frame;
    e->expires_ns = gc_now_ns() + (uint64_t)cfg->service_lease_s * 1000000000u;
    TAILQ_INSERT_TAIL(&relay->early_announces, e, entry);
}

void job_handle_frame(struct link *link, const struct gc_frame_header *h,
                      const uint8_t *payload)
{
    struct relay *relay = link->relay;
    struct gc_job_frame frame;
    if (!relay->service) {
        gc_log_warn("link %s: JOB frame on a per-job relay; ignored",
                    link->peer->name);
        return;
    }
    if (gc_job_frame_decode(payload, h->payload_len, &frame) != 0) {
        gc_log_warn("link %s: malformed JOB frame for job %u; ignored",
                    link->peer->name, h->job_id);
        return;
    }
    struct job *job = job_find(relay, h->job_id);
    if (frame.op == GC_JOB_WITHDRAW) {
        struct early_announce *e, *next;
        for (e = TAILQ_FIRST(&relay->early_announces); e != NULL; e = next) {
            next = TAILQ_NEXT(e, entry);
            if (e->link == link && e->id == h->job_id)
                forget_early(relay, e);
        }
        struct job_peer *jp = job != NULL ? job_peer_on_link(job, link) : NULL;
        /* Another job under our id (see take_announce) ending there is not
         * ours ending. */
        if (jp != NULL &&
            memcmp(frame.token_hash, job->token_hash, GC_JOB_HASH_SIZE) == 0)
            job_end(job, GC_ERR_JOB_ENDED, 1, "ended at site %s: %s",
                    link->peer->name, frame.reason);
        else if (jp != NULL)
            jp->conflict[0] = '\0';
        return;
    }
    if (job == NULL)
        keep_early(link, h->job_id, &frame);
    else
        take_announce(job, link, &frame);
}

/* ---- registration ----------------------------------------------------- */

struct job *job_from_config(struct relay *relay)
{
    const struct relay_config *cfg = relay->cfg;
    char err[512];
    struct job *job =
        job_alloc(relay, cfg->job_id, cfg->first_rank, cfg->rank_count);
    if (job == NULL)
        return NULL;
    snprintf(job->owner, sizeof job->owner, "config");
    int len = gc_token_read_file(cfg->token_file, job->token, sizeof job->token,
                                 err, sizeof err);
    if (len < 0) {
        gc_log_error("%s", err);
        goto fail;
    }
    job->token_len = (size_t)len;
    for (uint32_t i = 0; i < cfg->peer_count; i++) {
        const struct relay_peer_config *p = &cfg->peers[i];
        if (job_add_peer(job, p->name, p->first_rank, p->rank_count,
                         &relay->links[i]) != 0)
            goto fail;
        /* The link's own handshake proves the peer has the token; the
         * per-rank credit is its only budget. */
        job->peers[i].confirmed = 1;
        job->peers[i].job_credit = UINT64_MAX;
    }
    job->state = JOB_READY;
    job_insert(relay, job);
    return job;
fail:
    job_free(job);
    return NULL;
}

static void take_early_announces(struct job *job)
{
    struct relay *relay = job->relay;
    struct early_announce *e, *next;
    for (e = TAILQ_FIRST(&relay->early_announces); e != NULL; e = next) {
        next = TAILQ_NEXT(e, entry);
        if (e->id != job->id)
            continue;
        take_announce(job, e->link, &e->frame);
        forget_early(relay, e);
    }
}

/* The request as a JOB announcement would describe it, and its hash. */
static int describe_request(const struct job_request *req,
                            struct gc_job_frame *frame, uint8_t *token_hash)
{
    frame->site_count = (uint8_t)req->site_count;
    memcpy(frame->sites, req->sites, sizeof frame->sites);
    return gc_job_token_hash(req->token, req->token_len, token_hash);
}

/*
 * A peer site already announced another job under the requested id: the
 * registration is refused and nothing changes, neither here nor there (a
 * tenant must not end another's job by reusing its id).  0 or -1 with
 * the reason in `err`.
 */
static int check_early_announces(struct relay *relay,
                                 const struct job_request *req,
                                 const struct gc_job_frame *mine,
                                 const uint8_t *token_hash, char *err,
                                 size_t err_len)
{
    const struct early_announce *e;
    char why[160];
    TAILQ_FOREACH(e, &relay->early_announces, entry)
    {
        if (e->id == req->id &&
            !same_job(mine, token_hash, &e->frame, why, sizeof why)) {
            snprintf(err, err_len,
                     "job id %u is in use at site %s by another job (%s): "
                     "register under another id",
                     req->id, e->link->peer->name, why);
            return -1;
        }
    }
    return 0;
}

/* Quotas: the site's table, and what one owner may hold of it. */
static int check_limits(struct relay *relay, const struct job_request *req,
                        uint32_t own_ranks, int *http_status, char *err,
                        size_t err_len)
{
    const struct relay_config *cfg = relay->cfg;
    uint32_t owner_jobs = 0;
    uint64_t owner_ranks = own_ranks;
    const struct job *job;
    if (req->rank_total > cfg->service_max_ranks) {
        *http_status = 400;
        snprintf(err, err_len,
                 "the job has %llu ranks, more than service.max_ranks = %u",
                 (unsigned long long)req->rank_total, cfg->service_max_ranks);
        return -1;
    }
    TAILQ_FOREACH(job, &relay->jobs, entry)
    {
        if (strcmp(job->owner, req->owner) == 0) {
            owner_jobs++;
            owner_ranks += job->rank_count;
        }
    }
    *http_status = 429;
    if (owner_jobs >= cfg->service_owner_jobs) {
        snprintf(err, err_len,
                 "%s has %u jobs registered here: service.owner_jobs",
                 req->owner, owner_jobs);
        return -1;
    }
    if (owner_ranks > cfg->service_owner_ranks) {
        snprintf(err, err_len,
                 "%s's jobs would have %llu ranks here, more than "
                 "service.owner_ranks = %u",
                 req->owner, (unsigned long long)owner_ranks,
                 cfg->service_owner_ranks);
        return -1;
    }
    *http_status = 503;
    if (relay->job_count >= cfg->service_max_jobs) {
        snprintf(err, err_len, "%u jobs registered: service.max_jobs",
                 relay->job_count);
        return -1;
    }
    if (relay->draining) {
        snprintf(err, err_len, "the service is stopping");
        return -1;
    }
    return 0;
}

struct job *job_register(struct relay *relay, const struct job_request *req,
                         int *http_status, char *err, size_t err_len)
{
    const struct relay_config *cfg = relay->cfg;
    const struct gc_job_site *own = NULL;
    struct job *job = NULL;
    struct gc_job_frame mine = {0};
    uint8_t token_hash[GC_JOB_HASH_SIZE];
    *http_status = 400;
    if (req->id == 0) {
        snprintf(err, err_len, "job id 0 is reserved");
        return NULL;
    }
    for (uint32_t i = 0; i < req->site_count; i++) {
        const struct gc_job_site *site = &req->sites[i];
        if (strcmp(site->name, cfg->site_name) == 0)
            own = site;
        else if (relay_link_by_name(relay, site->name) == NULL) {
            snprintf(err, err_len,
                     "site %s is not a peer of site %s (peers in %s)",
                     site->name, cfg->site_name, cfg->source_file);
            return NULL;
        }
    }
    if (own == NULL) {
        snprintf(err, err_len, "the job has no ranks at site %s",
                 cfg->site_name);
        return NULL;
    }
    if (check_limits(relay, req, own->rank_count, http_status, err, err_len) !=
        0)
        return NULL;
    *http_status = 409;
    if (job_find(relay, req->id) != NULL) {
        snprintf(err, err_len, "job %u is already registered", req->id);
        return NULL;
    }
    if (describe_request(req, &mine, token_hash) != 0)
        goto no_memory;
    if (check_early_announces(relay, req, &mine, token_hash, err, err_len) != 0)
        return NULL;
    job = job_alloc(relay, req->id, own->first_rank, own->rank_count);
    if (job == NULL)
        goto no_memory;
    snprintf(job->owner, sizeof job->owner, "%s", req->owner);
    memcpy(job->token, req->token, req->token_len);
    job->token_len = req->token_len;
    memcpy(job->token_hash, token_hash, GC_JOB_HASH_SIZE);
    for (uint32_t i = 0; i < req->site_count; i++) {
        const struct gc_job_site *site = &req->sites[i];
        if (site != own &&
            job_add_peer(job, site->name, site->first_rank, site->rank_count,
                         relay_link_by_name(relay, site->name)) != 0)
            goto no_memory;
    }
    uint32_t lease_s = req->lease_s < cfg->service_lease_s
                           ? req->lease_s
                           : cfg->service_lease_s;
    job->lease_ns = (uint64_t)(lease_s ? lease_s : 1) * 1000000000u;
    job_renew(job);
    job->state = job->peer_count == 0 ? JOB_READY : JOB_WAITING;
    job_insert(relay, job);
    gc_log_info("job %u (%s): registered, ranks %u..%u here, %u peer "
                "site(s), lease %u s",
                job->id, job->owner, job->first_rank,
                job->first_rank + job->rank_count - 1, job->peer_count,
                lease_s);
    for (uint32_t i = 0; i < job->peer_count; i++)
        announce(job, &job->peers[i]);
    take_early_announces(job);
    return job;
no_memory:
    if (job != NULL)
        job_free(job);
    *http_status = 503;
    snprintf(err, err_len, "out of memory");
    return NULL;
}

void job_renew(struct job *job)
{
    job->lease_deadline_ns = gc_now_ns() + job->lease_ns;
}

/* ---- the end ---------------------------------------------------------- */

void job_end(struct job *job, enum gc_error_code code, int tell_peers,
             const char *fmt, ...)
{
    struct relay *relay = job->relay;
    if (job->state == JOB_ENDED)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(job->end_reason, sizeof job->end_reason, fmt, ap);
    va_end(ap);
    gc_log_info("job %u (%s): ended: %s", job->id, job->owner, job->end_reason);
    job->state = JOB_ENDED;
    TAILQ_REMOVE(&relay->jobs, job, entry);
    relay->job_count--;
    control_job_ended(relay, job);
    struct session *s, *next;
    for (s = TAILQ_FIRST(&relay->sessions); s != NULL; s = next) {
        next = TAILQ_NEXT(s, entry);
        if (s->job == job && s->state != SESSION_CLOSING)
            session_fail(s, code, "job %u: %s", job->id, job->end_reason);
    }
    drop_pending(job);
    for (uint32_t i = 0; i < job->peer_count; i++)
        link_drop_job_queue(&job->peers[i]);
    if (tell_peers) {
        struct gc_job_frame frame = {.op = GC_JOB_WITHDRAW};
        memcpy(frame.token_hash, job->token_hash, GC_JOB_HASH_SIZE);
        snprintf(frame.reason, sizeof frame.reason, "%s", job->end_reason);
        for (uint32_t i = 0; i < job->peer_count; i++)
            send_job_frame(job->peers[i].link, job->id, &frame);
    }
    /* Sessions of other jobs may wait for link budget this job held. */
    for (uint32_t i = 0; i < job->peer_count; i++)
        link_wake_waiters(job->peers[i].link);
    job_unref(job);
}

void job_link_lost(struct link *link, int restarted, const char *why)
{
    struct relay *relay = link->relay;
    if (!relay->service) {
        /* The configuration's job stays: its ranks at this site may go on
         * among themselves, and only those talking to the peer fail. */
        link_fail_sessions(link, GC_ERR_PEER_UNREACHABLE, "site %s: %s",
                           link->peer->name, why);
        return;
    }
    struct job *job, *next;
    for (job = TAILQ_FIRST(&relay->jobs); job != NULL; job = next) {
        next = TAILQ_NEXT(job, entry);
        struct job_peer *jp = job_peer_on_link(job, link);
        /* A restarted peer lost only the jobs it had confirmed; one
         * registered here since waits for the new incarnation's word. */
        if (jp != NULL && (!restarted || jp->confirmed))
            job_end(job, GC_ERR_PEER_UNREACHABLE, 1, "site %s: %s",
                    link->peer->name, why);
    }
    /* What the old incarnation announced is not the new one's. */
    struct early_announce *e, *enext;
    for (e = TAILQ_FIRST(&relay->early_announces); e != NULL; e = enext) {
        enext = TAILQ_NEXT(e, entry);
        if (e->link == link)
            forget_early(relay, e);
    }
    link_wake_waiters(link);
}

void job_link_reset(struct link *link)
{
    struct job *job;
    TAILQ_FOREACH(job, &link->relay->jobs, entry)
    {
        struct job_peer *jp = job_peer_on_link(job, link);
        if (jp == NULL)
            continue;
        memset(jp->credit_consumed, 0,
               jp->rank_count * sizeof *jp->credit_consumed);
        memset(jp->credit_returned, 0,
               jp->rank_count * sizeof *jp->credit_returned);
        memset(jp->returned_total, 0,
               job->rank_count * sizeof *jp->returned_total);
        memset(jp->returned_sent, 0,
               job->rank_count * sizeof *jp->returned_sent);
        jp->job_in_flight = 0;
        link_drop_job_queue(jp);
    }
}

void job_tick(struct relay *relay, uint64_t now)
{
    struct job *job, *next;
    for (job = TAILQ_FIRST(&relay->jobs); job != NULL; job = next) {
        next = TAILQ_NEXT(job, entry);
        if (job->lease_ns != 0 && now > job->lease_deadline_ns)
            job_end(job, GC_ERR_JOB_ENDED, 1,
                    "its launcher (%s) did not renew the job within %llu s",
                    job->owner,
                    (unsigned long long)(job->lease_ns / 1000000000u));
    }
    struct early_announce *e, *enext;
    for (e = TAILQ_FIRST(&relay->early_announces); e != NULL; e = enext) {
        enext = TAILQ_NEXT(e, entry);
        if (now > e->expires_ns)
            forget_early(relay, e);
    }
}

void job_free_all(struct relay *relay)
{
    struct job *job;
    while ((job = TAILQ_FIRST(&relay->jobs)) != NULL) {
        TAILQ_REMOVE(&relay->jobs, job, entry);
        drop_pending(job);
        for (uint32_t i = 0; i < job->peer_count; i++)
            link_drop_job_queue(&job->peers[i]);
        job->state = JOB_ENDED;
        job_unref(job);
    }
    struct early_announce *e;
    while ((e = TAILQ_FIRST(&relay->early_announces)) != NULL)
        forget_early(relay, e);
}
