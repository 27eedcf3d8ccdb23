/*
 * The fat tree FT(L; M1..ML) of Prisacari, Minkenberg, Rodriguez and
 * Hoefler, "Bandwidth-optimal all-to-all exchanges in fat tree networks"
 * (ICS'13): §3 defines the tree, §3.1 eq. 1 the per-phase link bound
 * B_min(l).  The load counted here is the paper's ideal fat tree: all
 * traffic leaving a level-l subtree shares that subtree's up-link, so the
 * link load of a phase is the number of messages leaving the subtree.
 */
#include <limits.h>
#include <stdio.h>

#include "patterns/gc_sched.h"
#include "patterns/gc_sched_util.h"

int gc_sched_fattree_check(const struct gc_sched_fattree *tree, char *err,
                           size_t err_len)
{
    if (tree->levels < 1 || tree->levels > GC_SCHED_MAX_LEVELS) {
        gc_sched_set_err(err, err_len, "a fat tree has 1 to %d levels, not %d",
                         GC_SCHED_MAX_LEVELS, tree->levels);
        return -1;
    }
    long leaves = 1;
    for (int l = 0; l < tree->levels; l++) {
        if (tree->arity[l] < 1) {
            gc_sched_set_err(err, err_len, "arity M%d = %d is not positive",
                             l + 1, tree->arity[l]);
            return -1;
        }
        leaves *= tree->arity[l];
        if (leaves > GC_SCHED_MAX_RANKS) {
            gc_sched_set_err(err, err_len, "more than %d leaves",
                             GC_SCHED_MAX_RANKS);
            return -1;
        }
    }
    return 0;
}

int gc_sched_fattree_parse(const char *text, struct gc_sched_fattree *tree,
                           char *err, size_t err_len)
{
    struct gc_sched_fattree parsed = {0};
    if (gc_sched_parse_int_list(text, parsed.arity, GC_SCHED_MAX_LEVELS,
                                &parsed.levels, GC_SCHED_MAX_RANKS, err,
                                err_len) != 0)
        return -1;
    if (gc_sched_fattree_check(&parsed, err, err_len) != 0)
        return -1;
    *tree = parsed;
    return 0;
}

void gc_sched_fattree_format(const struct gc_sched_fattree *tree, char *out,
                             size_t out_len)
{
    size_t used = 0;
    if (out_len == 0)
        return;
    out[0] = '\0';
    for (int l = 0; l < tree->levels && used < out_len; l++)
        used += (size_t)snprintf(out + used, out_len - used, "%s%d",
                                 l ? "," : "", tree->arity[l]);
}

long gc_sched_fattree_subtree_leaves(const struct gc_sched_fattree *tree,
                                     int level)
{
    long leaves = 1;
    for (int l = 0; l < level && l < tree->levels; l++)
        leaves *= tree->arity[l];
    return leaves;
}

long gc_sched_fattree_leaves(const struct gc_sched_fattree *tree)
{
    return gc_sched_fattree_subtree_leaves(tree, tree->levels);
}

long gc_sched_fattree_bmin(const struct gc_sched_fattree *tree, int level)
{
    long below = gc_sched_fattree_subtree_leaves(tree, level);
    /* Pi_L / Pi_l = M(l+1) * ... * ML: the number of level-l subtrees */
    long subtrees = gc_sched_fattree_leaves(tree) / below;
    return below - below / subtrees;
}

void gc_sched_fattree_fit(const struct gc_sched_fattree *tree, int ranks,
                          struct gc_sched_fattree *fitted)
{
    struct gc_sched_fattree out = {0};
    long kept = 1;
    for (int l = 0; tree != NULL && l < tree->levels; l++) {
        long below = kept * tree->arity[l];
        /*
         * A level whose subtrees would not divide the ranks evenly cannot
         * be a level of a variable-base exchange over exactly `ranks`
         * numbers; it and everything above it become the one top level.
         */
        if (below > ranks || ranks % below != 0)
            break;
        out.arity[out.levels++] = tree->arity[l];
        kept = below;
    }
    if (out.levels == GC_SCHED_MAX_LEVELS)
        out.arity[out.levels - 1] *= (int)(ranks / kept); /* no room above */
    else if (ranks / kept > 1 || out.levels == 0)
        out.arity[out.levels++] = (int)(ranks / kept);
    *fitted = out;
}

void gc_sched_fattree_level_load(const struct gc_sched_fattree *tree, int ranks,
                                 const int *dst_of_rank, int level,
                                 long *crossing, long *max_load)
{
    long below = gc_sched_fattree_subtree_leaves(tree, level);
    long total = 0, worst = 0;
    /* ranks sit on consecutive leaves, so each subtree is one block */
    for (long first = 0; first < ranks; first += below) {
        long leaving = 0;
        for (long r = first; r < first + below && r < ranks; r++) {
            int dst = dst_of_rank[r];
            if (dst >= 0 && dst / below != first / below)
                leaving++;
        }
        total += leaving;
        if (leaving > worst)
            worst = leaving;
    }
    *crossing = total;
    *max_load = worst;
}
