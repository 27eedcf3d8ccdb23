/*
 * What a launcher sends the service's control endpoint, parsed without the
 * event loop: the request line's target (method and path) and the
 * registration body.  Both come from a tenant, so both are hostile input:
 * bounded in size, parsed in bounded time, allocating nothing, with no file
 * access.  Kept apart from control.c so the fuzz target
 * (tests/fuzz/fuzz_control.c) runs exactly this code.
 */
#ifndef CONTROL_REQUEST_H
#define CONTROL_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "gc_proto.h"
#include "gc_util.h"

#define CONTROL_MAX_BODY (64 * 1024)

/* What a launcher asks for when it registers a job. */
struct job_request {
    uint32_t id;
    char owner[128];
    uint8_t token[GC_TOKEN_MAX];
    size_t token_len;
    uint32_t lease_s;
    uint32_t site_count;
    struct gc_job_site sites[GC_JOB_SITES_MAX];
    uint64_t rank_total; /* ranks of the job over all its sites */
};

/* Parse a registration body of `len` bytes (the subset of libconfig's
 * syntax control_request.c describes).  0, or -1 with "line N: ..." in `err`.
 */
int control_request_parse(const char *text, size_t len, struct job_request *jr,
                          char *err, size_t err_len);

enum control_route {
    ROUTE_NONE = 0, /* no such resource */
    ROUTE_JOBS,     /* /jobs */
    ROUTE_JOB,      /* /jobs/ID */
    ROUTE_RENEW,    /* /jobs/ID/renew */
    ROUTE_STATUS,   /* /status */
    ROUTE_METRICS,  /* /metrics */
};

/* The resource `path` names; `*id` for the job routes. */
enum control_route control_route_parse(const char *path, uint32_t *id);

#endif
