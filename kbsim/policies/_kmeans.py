"""Compiled k-means pieces shared by the policies: z-scoring, k-means++ seeding, Lloyd, relabel.

All sums run sequentially in index order (no pairwise or vectorised reductions), which is what
lets the plain-Python reference reproduce them bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim._jit import inner_njit
from kbsim.rng import rand_int, rand_uniform


@inner_njit(_nrt=False)
def sqdist_rows(a, i, b, j) -> float:
    """Squared Euclidean distance between row i of `a` and row j of `b` (sequential sum)."""
    d2 = 0.0
    for d in range(a.shape[1]):
        diff = a[i, d] - b[j, d]
        d2 += diff * diff
    return d2


@inner_njit(_nrt=False)
def nearest_row(x, i, cent, k) -> int:
    """Index of the row of cent[:k] nearest to x[i] (ties: lowest index)."""
    best = 0
    best_d2 = np.inf
    for j in range(k):
        d2 = sqdist_rows(x, i, cent, j)
        if d2 < best_d2:
            best_d2 = d2
            best = j
    return best


@inner_njit(_nrt=False)
def zscore_t(data, n, mean, std, zt) -> None:
    """z-score rows [0, n) of `data` (points x dims) into `zt` (dims x points, so that loops
    over points vectorise); NaN entries are ignored in the moments and map to 0; a constant
    column gets std 1. Writes the moments into `mean`, `std`."""
    if data.shape[1] == 5:
        _zscore5(data, n, mean, std, zt)
        return
    for d in range(data.shape[1]):
        total = 0.0
        count = 0
        for i in range(n):
            v = data[i, d]
            if v == v:
                total += v
                count += 1
        m = total / count if count > 0 else 0.0
        ss = 0.0
        for i in range(n):
            v = data[i, d]
            if v == v:
                ss += (v - m) * (v - m)
        _zscore_column(data, n, d, total, count, ss, mean, std, zt)


@njit(cache=True, _nrt=False, inline="always")
def _zscore_column(data, n, d, total, count, ss, mean, std, zt) -> None:
    m = total / count if count > 0 else 0.0
    s = math.sqrt(ss / count) if count > 0 else 0.0
    if not s > 0.0:
        s = 1.0
    mean[d] = m
    std[d] = s
    for i in range(n):
        v = data[i, d]
        zt[d, i] = (v - m) / s if v == v else 0.0


@inner_njit(_nrt=False)
def _zscore5(data, n, mean, std, zt) -> None:
    """`zscore_t` for 5 dims: the five sequential sums run side by side in registers (each
    still in index order; a skipped NaN adds +0.0, which leaves a sum that starts at +0.0
    unchanged), so their latency chains overlap instead of running one after another."""
    t0 = t1 = t2 = t3 = t4 = 0.0
    n0 = n1 = n2 = n3 = n4 = 0
    for i in range(n):
        v0, v1, v2, v3, v4 = data[i, 0], data[i, 1], data[i, 2], data[i, 3], data[i, 4]
        t0 += v0 if v0 == v0 else 0.0
        t1 += v1 if v1 == v1 else 0.0
        t2 += v2 if v2 == v2 else 0.0
        t3 += v3 if v3 == v3 else 0.0
        t4 += v4 if v4 == v4 else 0.0
        n0 += 1 if v0 == v0 else 0
        n1 += 1 if v1 == v1 else 0
        n2 += 1 if v2 == v2 else 0
        n3 += 1 if v3 == v3 else 0
        n4 += 1 if v4 == v4 else 0
    m0 = t0 / n0 if n0 > 0 else 0.0
    m1 = t1 / n1 if n1 > 0 else 0.0
    m2 = t2 / n2 if n2 > 0 else 0.0
    m3 = t3 / n3 if n3 > 0 else 0.0
    m4 = t4 / n4 if n4 > 0 else 0.0
    s0 = s1 = s2 = s3 = s4 = 0.0
    for i in range(n):
        v0, v1, v2, v3, v4 = data[i, 0], data[i, 1], data[i, 2], data[i, 3], data[i, 4]
        s0 += (v0 - m0) * (v0 - m0) if v0 == v0 else 0.0
        s1 += (v1 - m1) * (v1 - m1) if v1 == v1 else 0.0
        s2 += (v2 - m2) * (v2 - m2) if v2 == v2 else 0.0
        s3 += (v3 - m3) * (v3 - m3) if v3 == v3 else 0.0
        s4 += (v4 - m4) * (v4 - m4) if v4 == v4 else 0.0
    _zscore_column(data, n, 0, t0, n0, s0, mean, std, zt)
    _zscore_column(data, n, 1, t1, n1, s1, mean, std, zt)
    _zscore_column(data, n, 2, t2, n2, s2, mean, std, zt)
    _zscore_column(data, n, 3, t3, n3, s3, mean, std, zt)
    _zscore_column(data, n, 4, t4, n4, s4, mean, std, zt)


@inner_njit(_nrt=False)
def sqdist_to_centre(zt, n, cent, j, out) -> None:
    """out[i] = sum_d (zt[d, i] - cent[j, d])^2 for i < n; each sum runs over d in order (the
    loop over points is the vectorised one, so every distance is still a sequential sum)."""
    if zt.shape[0] == 5:
        c0, c1, c2, c3, c4 = cent[j, 0], cent[j, 1], cent[j, 2], cent[j, 3], cent[j, 4]
        z0, z1, z2, z3, z4 = zt[0], zt[1], zt[2], zt[3], zt[4]
        for i in range(n):
            e0 = z0[i] - c0
            e1 = z1[i] - c1
            e2 = z2[i] - c2
            e3 = z3[i] - c3
            e4 = z4[i] - c4
            out[i] = (((e0 * e0 + e1 * e1) + e2 * e2) + e3 * e3) + e4 * e4
        return
    for i in range(n):
        out[i] = 0.0
    for d in range(zt.shape[0]):
        c = cent[j, d]
        for i in range(n):
            diff = zt[d, i] - c
            out[i] += diff * diff


@inner_njit(_nrt=False)
def kmeanspp_seed_t(zt, n, k, cent, d2, tmp, rng) -> None:
    """k-means++ (Arthur and Vassilvitskii 2007) on the points (columns) of `zt`: first centre
    uniform, each next one drawn with probability proportional to D(x)^2 (uniform when every
    D(x) is 0). `d2`, `tmp` are scratch of length >= n."""
    D = zt.shape[0]
    first = rand_int(rng, n)
    for d in range(D):
        cent[0, d] = zt[d, first]
    sqdist_to_centre(zt, n, cent, np.int64(0), d2)  # run-time 0: see kmeanspp_seed_dist
    for j in range(1, k):
        total = 0.0
        for i in range(n):
            total += d2[i]
        if total > 0.0:
            u = rand_uniform(rng) * total
            pick = -1
            cum = 0.0
            last_pos = 0
            for i in range(n):
                if d2[i] > 0.0:
                    last_pos = i
                cum += d2[i]
                if u < cum:
                    pick = i
                    break
            if pick < 0:
                pick = last_pos
        else:
            pick = rand_int(rng, n)
        for d in range(D):
            cent[j, d] = zt[d, pick]
        sqdist_to_centre(zt, n, cent, j, tmp)
        for i in range(n):
            if tmp[i] < d2[i]:
                d2[i] = tmp[i]


@inner_njit(_nrt=False)
def kmeanspp_seed_dist(zt, n, k, cent, dist, d2, rng) -> None:
    """`kmeanspp_seed_t` (same draws, same centres) that also leaves each centre's squared
    distances in dist[j, :n], ready for Lloyd's first assignment. D(x)^2 is drawn from by a
    binary search of its running sums (the first index whose running sum exceeds u, as the
    linear scan finds). `d2` is scratch of length >= n; the running sums live in the last row
    of `dist` until that row's centre is drawn (k >= 2)."""
    D = zt.shape[0]
    first = rand_int(rng, n)
    for d in range(D):
        cent[0, d] = zt[d, first]
    # a run-time 0 (np.int64), not a literal one: the call shares the loop's compiled variant
    sqdist_to_centre(zt, n, cent, np.int64(0), dist[0])
    if k < 2:
        return
    cum = dist[k - 1]
    total = 0.0
    for i in range(n):
        v = dist[0, i]
        d2[i] = v
        total += v
        cum[i] = total
    for j in range(1, k):
        if total > 0.0:
            u = rand_uniform(rng) * total
            pick = -1
            if total < np.inf:  # running sums non-decreasing: binary search
                if u < cum[n - 1]:
                    lo = 0
                    hi = n - 1
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if u < cum[mid]:
                            hi = mid
                        else:
                            lo = mid + 1
                    pick = lo
            else:
                for i in range(n):
                    if u < cum[i]:
                        pick = i
                        break
            if pick < 0:  # rounding: the last point with D(x) > 0
                pick = 0
                for i in range(n - 1, -1, -1):
                    if d2[i] > 0.0:
                        pick = i
                        break
        else:
            pick = rand_int(rng, n)
        for d in range(D):
            cent[j, d] = zt[d, pick]
        row = dist[j]
        sqdist_to_centre(zt, n, cent, j, row)
        if j < k - 1:
            total = 0.0
            for i in range(n):
                v = row[i] if row[i] < d2[i] else d2[i]
                d2[i] = v
                total += v
                cum[i] = total


@inner_njit(_nrt=False)
def _argmin_centres(n, k, dist, best_d, new_lab, labels) -> bool:
    """labels[i] = argmin_j dist[j, i] (ties: lowest j); True if any label changed. Written as
    passes over the points (selects, no branches) so that they vectorise."""
    for i in range(n):
        best_d[i] = dist[0, i]
        new_lab[i] = 0
    for j in range(1, k):
        row = dist[j]
        for i in range(n):
            v = row[i]
            closer = v < best_d[i]
            best_d[i] = v if closer else best_d[i]
            new_lab[i] = j if closer else new_lab[i]
    changed = 0
    for i in range(n):
        changed |= 1 if new_lab[i] != labels[i] else 0
        labels[i] = new_lab[i]
    return changed != 0


@inner_njit(_nrt=False)
def _move_centres(zt, n, k, cent, labels, moved, counts, acc) -> None:
    """Each centre to the mean of its members (summed in index order; empty clusters keep
    theirs); moved[c] = 1 where the centre changed."""
    D = zt.shape[0]
    if D == 5:
        for g in range(0, k, 3):
            _sum_three_clusters5(zt, n, k, g, labels, counts, acc)
    else:
        for c in range(k):
            counts[c] = 0.0
            for d in range(D):
                acc[c, d] = 0.0
        for i in range(n):
            c = labels[i]
            counts[c] += 1.0
            for d in range(D):
                acc[c, d] += zt[d, i]
    for c in range(k):
        moved[c] = 0
        if counts[c] > 0.0:
            for d in range(D):
                v = acc[c, d] / counts[c]
                if not v == cent[c, d]:
                    moved[c] = 1
                cent[c, d] = v


@inner_njit(_nrt=False)
def _sum_three_clusters5(zt, n, k, g, labels, counts, acc) -> None:
    """Member counts and coordinate sums (5 dims) of clusters g, g + 1, g + 2 (those < k) in
    one pass over the points: fifteen running sums in registers, each in index order; a point
    of another cluster adds +0.0, which leaves a sum that starts at +0.0 unchanged."""
    a00 = a01 = a02 = a03 = a04 = 0.0
    a10 = a11 = a12 = a13 = a14 = 0.0
    a20 = a21 = a22 = a23 = a24 = 0.0
    m0 = m1 = m2 = 0
    for i in range(n):
        c = labels[i] - g
        v0, v1, v2, v3, v4 = zt[0, i], zt[1, i], zt[2, i], zt[3, i], zt[4, i]
        t0 = c == 0
        t1 = c == 1
        t2 = c == 2
        m0 += 1 if t0 else 0
        m1 += 1 if t1 else 0
        m2 += 1 if t2 else 0
        a00 += v0 if t0 else 0.0
        a01 += v1 if t0 else 0.0
        a02 += v2 if t0 else 0.0
        a03 += v3 if t0 else 0.0
        a04 += v4 if t0 else 0.0
        a10 += v0 if t1 else 0.0
        a11 += v1 if t1 else 0.0
        a12 += v2 if t1 else 0.0
        a13 += v3 if t1 else 0.0
        a14 += v4 if t1 else 0.0
        a20 += v0 if t2 else 0.0
        a21 += v1 if t2 else 0.0
        a22 += v2 if t2 else 0.0
        a23 += v3 if t2 else 0.0
        a24 += v4 if t2 else 0.0
    counts[g] = m0
    acc[g, 0], acc[g, 1], acc[g, 2], acc[g, 3], acc[g, 4] = a00, a01, a02, a03, a04
    if g + 1 < k:
        counts[g + 1] = m1
        acc[g + 1, 0], acc[g + 1, 1], acc[g + 1, 2] = a10, a11, a12
        acc[g + 1, 3], acc[g + 1, 4] = a13, a14
    if g + 2 < k:
        counts[g + 2] = m2
        acc[g + 2, 0], acc[g + 2, 1], acc[g + 2, 2] = a20, a21, a22
        acc[g + 2, 3], acc[g + 2, 4] = a23, a24


@inner_njit(_nrt=False)
def lloyd_dist(zt, n, k, cent, labels, dist, best_d, new_lab, moved, counts, acc, iters) -> bool:
    """`lloyd_t` from centres whose distances are already in dist[:k, :n] (e.g.
    `kmeanspp_seed_dist`): only centres that moved get their distances recomputed (an unmoved
    centre has the same coordinates, so the same distances). Same labels and centres as
    `lloyd_t`. Returns True when dist holds the distances to the final centres (converged
    before the iteration cap)."""
    for i in range(n):
        labels[i] = -1
    for it in range(iters):
        if not _argmin_centres(n, k, dist, best_d, new_lab, labels):
            return True
        _move_centres(zt, n, k, cent, labels, moved, counts, acc)
        if it == iters - 1:
            break
        for j in range(k):
            if moved[j] == 1:
                sqdist_to_centre(zt, n, cent, j, dist[j])
    return False


@inner_njit(_nrt=False)
def assign_nearest_t(zt, n, k, cent, dist, labels) -> bool:
    """labels[i] = nearest centre of point i (ties: lowest centre); True if any label changed.
    `dist` is (>= k, >= n) scratch."""
    for j in range(k):
        sqdist_to_centre(zt, n, cent, j, dist[j])
    changed = False
    for i in range(n):
        best = 0
        best_d2 = dist[0, i]
        for j in range(1, k):
            if dist[j, i] < best_d2:
                best_d2 = dist[j, i]
                best = j
        if best != labels[i]:
            labels[i] = best
            changed = True
    return changed


@inner_njit(_nrt=False)
def lloyd_t(zt, n, k, cent, labels, dist, acc, counts, iters) -> None:
    """Lloyd iterations from the centres in `cent`: assign (ties: lowest centre), stop when no
    label changes, else move each centre to its members' mean (empty clusters keep theirs)."""
    D = zt.shape[0]
    for i in range(n):
        labels[i] = -1
    for _ in range(iters):
        if not assign_nearest_t(zt, n, k, cent, dist, labels):
            break
        acc[:, :] = 0.0
        counts[:] = 0.0
        for i in range(n):
            counts[labels[i]] += 1.0
        for d in range(D):
            for i in range(n):
                acc[labels[i], d] += zt[d, i]
        for c in range(k):
            if counts[c] > 0.0:
                for d in range(D):
                    cent[c, d] = acc[c, d] / counts[c]


@inner_njit(_nrt=False)
def match_labels(new_cent, old_cent, k, perm, used_new, used_old) -> None:
    """Greedy matching of new centres to old ones (closest pair first, ties: lowest new then
    old index): perm[new] = old label, so arm statistics keep following similar clusters."""
    used_new[:k] = 0
    used_old[:k] = 0
    for _ in range(k):
        best = np.inf
        bj = -1
        bi = -1
        for j in range(k):
            if used_new[j]:
                continue
            for i in range(k):
                if used_old[i]:
                    continue
                d2 = sqdist_rows(new_cent, j, old_cent, i)
                if bj < 0 or d2 < best:
                    best = d2
                    bj = j
                    bi = i
        perm[bj] = bi
        used_new[bj] = 1
        used_old[bi] = 1
