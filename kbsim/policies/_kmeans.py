"""Compiled k-means pieces shared by the policies: z-scoring, k-means++ seeding, Lloyd, relabel.

All sums run sequentially in index order (no pairwise or vectorised reductions), which is what
lets the plain-Python reference reproduce them bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from kbsim.rng import rand_int, rand_uniform


@njit(cache=True, _nrt=False)
def sqdist_rows(a, i, b, j) -> float:
    """Squared Euclidean distance between row i of `a` and row j of `b` (sequential sum)."""
    d2 = 0.0
    for d in range(a.shape[1]):
        diff = a[i, d] - b[j, d]
        d2 += diff * diff
    return d2


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
def zscore_t(data, n, mean, std, zt) -> None:
    """z-score rows [0, n) of `data` (points x dims) into `zt` (dims x points, so that loops
    over points vectorise); NaN entries are ignored in the moments and map to 0; a constant
    column gets std 1. Writes the moments into `mean`, `std`."""
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
        s = math.sqrt(ss / count) if count > 0 else 0.0
        if not s > 0.0:
            s = 1.0
        mean[d] = m
        std[d] = s
        for i in range(n):
            v = data[i, d]
            zt[d, i] = (v - m) / s if v == v else 0.0


@njit(cache=True, _nrt=False)
def sqdist_to_centre(zt, n, cent, j, out) -> None:
    """out[i] = sum_d (zt[d, i] - cent[j, d])^2 for i < n; each sum runs over d in order (the
    loop over points is the vectorised one, so every distance is still a sequential sum)."""
    for i in range(n):
        out[i] = 0.0
    for d in range(zt.shape[0]):
        c = cent[j, d]
        for i in range(n):
            diff = zt[d, i] - c
            out[i] += diff * diff


@njit(cache=True, _nrt=False)
def kmeanspp_seed_t(zt, n, k, cent, d2, tmp, rng) -> None:
    """k-means++ (Arthur and Vassilvitskii 2007) on the points (columns) of `zt`: first centre
    uniform, each next one drawn with probability proportional to D(x)^2 (uniform when every
    D(x) is 0). `d2`, `tmp` are scratch of length >= n."""
    D = zt.shape[0]
    first = rand_int(rng, n)
    for d in range(D):
        cent[0, d] = zt[d, first]
    sqdist_to_centre(zt, n, cent, 0, d2)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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


@njit(cache=True, _nrt=False)
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
