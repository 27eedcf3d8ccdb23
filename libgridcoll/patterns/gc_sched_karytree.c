/*
 * Down-link contention of one communication phase on a k-ary n-tree, the
 * network model of Kumar and Kale, "Scaling all-to-all multicast on
 * fat-tree networks" (ICPADS'04), §4.1.
 *
 * Leaf x has the n base-k digits x_0..x_{n-1} (x_0 most significant).  A
 * message from leaf s to leaf d climbs to level l, the lowest at which s
 * and d share a subtree of k^(l+1) leaves, then descends.  Which of the
 * k^l equivalent level-l switches it reaches is decided on the way up; we
 * take the up-port with the same index as the port the message arrived on,
 * which makes the climb follow the low digits of s (s-mod-k).  The
 * descent is then fixed: the down-link from level j to level j-1 is named
 * by the top n-j digits of d and the low j digits of s, and the last link
 * by d.  Two messages of a phase contend when they name the same down-link.
 *
 * Why this routing: the paper's analysis (after Heller's CM-5 study) puts
 * contention on the descending links, and with per-source up paths no
 * up-link is ever shared, so down-links are the whole story.  Under it the
 * full tree makes every cyclic shift and, for k a power of two, every XOR
 * permutation congestion free: lemmas 1, 4, 5, 6 and kShift for K in
 * {1,2,3,4,8} hold.  It is more lenient than QsNet's adaptive up-routing
 * in one respect: it also clears shifts that lemma 6 excludes (e.g. by 5
 * on a 4-ary tree), whose conflicts come from up-link choices that a
 * deterministic per-source climb never makes.  Holes change the leaf distances
 * between consecutive ranks, and that is where contention appears.
 *
 * Cost: O(messages * n) per phase; the counters are cleared by undoing the
 * increments, so a phase costs nothing proportional to the tree size.
 */
#include <stdlib.h>
#include <string.h>

#include "patterns/gc_sched.h"
#include "patterns/gc_sched_util.h"

int gc_sched_karytree_init(struct gc_sched_karytree *t, int arity, int levels,
                           const int *holes, int hole_count, char *err,
                           size_t err_len)
{
    int status = -1;
    char *is_hole = NULL;
    long leaves = 1;
    memset(t, 0, sizeof *t);
    if (arity < 2 || levels < 1) {
        gc_sched_set_err(err, err_len,
                         "a k-ary n-tree needs k >= 2 and n >= 1 (k = %d, "
                         "n = %d)",
                         arity, levels);
        goto cleanup;
    }
    for (int l = 0; l < levels; l++) {
        leaves *= arity;
        if (leaves > GC_SCHED_MAX_KARY_LEAVES) {
            gc_sched_set_err(err, err_len,
                             "a %d-ary %d-tree has more than %d leaves", arity,
                             levels, GC_SCHED_MAX_KARY_LEAVES);
            goto cleanup;
        }
    }
    is_hole = calloc((size_t)leaves, 1);
    if (is_hole == NULL) {
        gc_sched_set_err(err, err_len, "out of memory");
        goto cleanup;
    }
    for (int i = 0; i < hole_count; i++) {
        if (holes[i] < 0 || holes[i] >= leaves) {
            gc_sched_set_err(err, err_len, "hole %d is not a leaf (0..%ld)",
                             holes[i], leaves - 1);
            goto cleanup;
        }
        if (is_hole[holes[i]]) {
            gc_sched_set_err(err, err_len, "hole %d is listed twice", holes[i]);
            goto cleanup;
        }
        is_hole[holes[i]] = 1;
    }
    if (hole_count >= leaves) {
        gc_sched_set_err(err, err_len, "every leaf is a hole");
        goto cleanup;
    }
    t->arity = arity;
    t->levels = levels;
    t->leaves = (int)leaves;
    t->ranks = (int)leaves - hole_count;
    t->leaf_of_rank = malloc((size_t)t->ranks * sizeof *t->leaf_of_rank);
    t->link_load =
        calloc((size_t)leaves * (size_t)levels, sizeof *t->link_load);
    if (t->leaf_of_rank == NULL || t->link_load == NULL) {
        gc_sched_set_err(err, err_len, "out of memory");
        goto cleanup;
    }
    for (int leaf = 0, rank = 0; leaf < leaves; leaf++) {
        if (!is_hole[leaf])
            t->leaf_of_rank[rank++] = leaf;
    }
    status = 0;
cleanup:
    free(is_hole);
    if (status != 0)
        gc_sched_karytree_free(t);
    return status;
}

void gc_sched_karytree_free(struct gc_sched_karytree *t)
{
    free(t->leaf_of_rank);
    free(t->link_load);
    t->leaf_of_rank = NULL;
    t->link_load = NULL;
}

/*
 * Add `delta` to every down-link of the message src_leaf -> dst_leaf and
 * return the highest count reached.
 */
static int route(struct gc_sched_karytree *t, int src_leaf, int dst_leaf,
                 int delta)
{
    int highest = 0;
    long span = 1; /* k^j: leaves under one level-(j-1) switch */
    for (int j = 0; j < t->levels; j++, span *= t->arity) {
        /* above the nearest common ancestor: no more down-links to take */
        if (j > 0 && src_leaf / span == dst_leaf / span)
            break;
        long link =
            (long)j * t->leaves + dst_leaf / span * span + src_leaf % span;
        t->link_load[link] += delta;
        if (t->link_load[link] > highest)
            highest = t->link_load[link];
    }
    return highest;
}

int gc_sched_karytree_max_downlink_load(struct gc_sched_karytree *t,
                                        const int *dst_of_rank)
{
    int worst = 0;
    for (int r = 0; r < t->ranks; r++) {
        int d = dst_of_rank[r];
        if (d < 0 || d == r || d >= t->ranks)
            continue;
        int load = route(t, t->leaf_of_rank[r], t->leaf_of_rank[d], 1);
        if (load > worst)
            worst = load;
    }
    for (int r = 0; r < t->ranks; r++) {
        int d = dst_of_rank[r];
        if (d >= 0 && d != r && d < t->ranks)
            route(t, t->leaf_of_rank[r], t->leaf_of_rank[d], -1);
    }
    return worst;
}
