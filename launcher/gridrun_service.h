/*
 * gridrun's side of a site's gridrelay service (machine file `service=`):
 * register the job with the control endpoint, wait until every site has
 * it, renew its lease while it runs, and remove it at the end.  The
 * protocol is in relay/control.c and docs/gridrelay.md ("Service mode").
 */
#ifndef GRIDRUN_SERVICE_H
#define GRIDRUN_SERVICE_H

#include <stddef.h>
#include <stdint.h>

struct gr_job;
struct gr_site;

/* Lease asked for; gridrun renews every third of it. */
#define GR_SERVICE_LEASE_S 30

/* Job ids gridrun registers a job under, at most, when the services
 * answer that an id is in use (HTTP 409). */
#define GR_SERVICE_REGISTER_ATTEMPTS 3

/* Register the job at every site; fills in sites' rank endpoints the
 * machine file left to the service.  Under a fresh job->job_id when an
 * id is in use at a site (said on stderr).  0, or -1 with a message
 * printed. */
int gr_service_register_all(struct gr_job *job);

/* 1 when every site reports the job ready, 0 not yet, -1 on an error
 * (printed: the job ended at a site, or a service cannot be reached). */
int gr_service_all_ready(struct gr_job *job);

/* Renew the leases that are due; -1 (message printed) when a service
 * lost the job. */
int gr_service_renew_due(struct gr_job *job);

/* GET the job at site `s`: the JSON body (malloc'd), or NULL. */
char *gr_service_job_status(const struct gr_job *job, const struct gr_site *s);

/* After ranks failed: name every site whose service no longer answers or
 * no longer has the job (the ranks there lost their relay); how many. */
int gr_service_report_lost(struct gr_job *job);

/* Remove the job from every site where it was registered. */
void gr_service_remove_all(struct gr_job *job);

#endif
