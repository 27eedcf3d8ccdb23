/*
 * The link's scheduler: deficit round robin over the jobs' queues
 * (relay.h says why).  Pure bookkeeping, so tests/unit/test_link_drr.c
 * can check the order and the shares without a link.
 */
#include "relay.h"

void drr_init(struct drr *drr)
{
    TAILQ_INIT(&drr->active);
    drr->bytes = 0;
}

void drr_queue_init(struct drr_queue *q)
{
    TAILQ_INIT(&q->chunks);
    q->bytes = 0;
    q->deficit = 0;
    q->active = 0;
}

/* An emptied queue starts afresh: credit it did not use is not saved up
 * for a later burst. */
static void deactivate(struct drr *drr, struct drr_queue *q)
{
    TAILQ_REMOVE(&drr->active, q, entry);
    q->active = 0;
    q->deficit = 0;
}

static void take(struct drr *drr, struct drr_queue *q, struct chunk *c)
{
    TAILQ_REMOVE(&q->chunks, c, entry);
    q->bytes -= chunk_cost(c);
    drr->bytes -= chunk_cost(c);
}

void drr_push(struct drr *drr, struct drr_queue *q, struct chunk *c)
{
    TAILQ_INSERT_TAIL(&q->chunks, c, entry);
    q->bytes += chunk_cost(c);
    drr->bytes += chunk_cost(c);
    if (!q->active) {
        q->active = 1;
        TAILQ_INSERT_TAIL(&drr->active, q, entry);
    }
}

void drr_drop(struct drr *drr, struct drr_queue *q)
{
    struct chunk *c;
    while ((c = TAILQ_FIRST(&q->chunks)) != NULL) {
        take(drr, q, c);
        chunk_unref(c);
    }
    if (q->active)
        deactivate(drr, q);
}

int drr_serve(struct drr *drr, uint64_t quantum,
              int (*may_send)(void *arg, const struct chunk *c),
              void (*send)(void *arg, struct chunk *c), void *arg)
{
    int progress = 1, moved = 0;
    while (progress && !TAILQ_EMPTY(&drr->active)) {
        progress = 0;
        struct drr_queue *q, *next;
        for (q = TAILQ_FIRST(&drr->active); q != NULL; q = next) {
            next = TAILQ_NEXT(q, entry);
            struct chunk *c = TAILQ_FIRST(&q->chunks);
            if (!may_send(arg, c))
                continue; /* its turn keeps its deficit */
            q->deficit += quantum;
            while (c != NULL && chunk_cost(c) <= q->deficit &&
                   may_send(arg, c)) {
                take(drr, q, c);
                q->deficit -= chunk_cost(c);
                send(arg, c);
                progress = moved = 1;
                c = TAILQ_FIRST(&q->chunks);
            }
            if (c == NULL) {
                deactivate(drr, q);
            } else {
                /* Round robin: the next turn starts after the others. */
                TAILQ_REMOVE(&drr->active, q, entry);
                TAILQ_INSERT_TAIL(&drr->active, q, entry);
            }
        }
    }
    return moved;
}
