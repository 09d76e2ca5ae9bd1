"""Would numba make the heliostat replay 10 times faster? A measurement, not a dependency
(a script, not a test; numba is not among tbmm's dependencies):

    uv run --with numba python tests/bench/heliostat_numba_probe.py [--largest]

The replay's two heaviest kernels (per candidate pair: the affine coefficients, the hull
test and the row-interval word; per mirror and moment: the 64 ray tests) compiled with
numba's njit, the rest of `simulate` as in tbmm.replay.heliostat_field; both fields of the
anchor (and with --largest the benchmark fields) replayed by the frozen copy
tests/reference_replays/heliostat_field_v1.py, by numpy and by the numba variants,
alternating (ROUNDS, default 3), with their CPU and whether every annual value is equal.
It also prints the CPU of importing numba and of readying the kernels (compiled, or loaded
from numba's cache with PROBE_CACHE=1), which a one-shot `tbmm verify` would pay.
"""

# ruff: noqa: E402, ANN001, ANN201, ANN202
import os
import sys
import time
from pathlib import Path

t_imp = time.process_time()
import numba as nb

t_imp = time.process_time() - t_imp
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "tests" / "bench"), str(ROOT)]
import bench_replay_heliostat_field as B

from tbmm.replay import heliostat_field as H
from tbmm.suite.tasks import TASKS_ROOT, load_task
from tbmm.verdict.scoring import read_artifact
from tests.reference_replays import heliostat_field_v1 as R

CACHE = os.environ.get("PROBE_CACHE", "0") == "1"


@nb.njit(cache=CACHE, inline="always")
def _mn(a, b):  # np.minimum: NaN propagates
    if a != a or b != b:
        return np.nan
    return a if a < b else b


@nb.njit(cache=CACHE, inline="always")
def _mx(a, b):
    if a != a or b != b:
        return np.nan
    return a if a > b else b


@nb.njit(cache=CACHE)
def occl_kernel(
    i,
    j,
    d0x,
    d0y,
    d0z,
    rx,
    ry,
    rz,
    common,
    pj0,
    pj1,
    pj2,
    n0,
    n1,
    n2,
    ej0,
    ej1,
    hj0,
    hj1,
    hj2,
    wv0,
    wv1,
    hv0,
    hv1,
    hv2,
    rows,
    tab,
    k,
    pos_of,
    lost,
):
    m = i.shape[0]
    lo = np.empty(k)
    hi = np.empty(k)
    for p in range(m):
        jj = j[p]
        ii = i[p]
        njx = n0[jj]
        njy = n1[jj]
        njz = n2[jj]
        ejx = ej0[jj]
        ejy = ej1[jj]
        hjx = hj0[jj]
        hjy = hj1[jj]
        hjz = hj2[jj]
        if common:
            den = pj0[jj]
            wd = pj1[jj]
            hd_ = pj2[jj]
        else:
            px = rx[p]
            py = ry[p]
            pz = rz[p]
            den = (njx * px + njz * pz) + njy * py
            wd = ejx * px + ejy * py
            hd_ = (hjx * px + hjz * pz) + hjy * py
        if not (abs(den) > 1e-12):
            continue
        dx = d0x[p]
        dy = d0y[p]
        dz = d0z[p]
        wix = wv0[ii]
        wiy = wv1[ii]
        hix = hv0[ii]
        hiy = hv1[ii]
        hiz = hv2[ii]
        inv = -1.0 / den
        l0 = ((njx * dx + njz * dz) + njy * dy) * inv
        la = (njx * wix + njy * wiy) * inv
        lb = ((njx * hix + njz * hiz) + njy * hiy) * inv
        u0 = (ejx * dx + ejy * dy) + l0 * wd
        ua = (ejx * wix + ejy * wiy) + la * wd
        ub = (ejx * hix + ejy * hiy) + lb * wd
        v0 = ((hjx * dx + hjz * dz) + hjy * dy) + l0 * hd_
        va = (hjx * wix + hjy * wiy) + la * hd_
        vb = ((hjx * hix + hjz * hiz) + hjy * hiy) + lb * hd_
        ru = 0.5 * (abs(ua) + abs(ub))
        rv = 0.5 * (abs(va) + abs(vb))
        rl = 0.5 * (abs(la) + abs(lb))
        if not ((abs(u0) <= 1 + ru) and (abs(v0) <= 1 + rv) and (l0 + rl > 0)):
            continue
        first = True
        for c in range(2):
            if c == 0:
                c0 = u0
                ca = ua
                cb = ub
            else:
                c0 = v0
                ca = va
                cb = vb
            inv_a = 1.0 / (1e-30 if abs(ca) < 1e-30 else ca)
            for r in range(k):
                t = c0 + cb * rows[r]
                e1 = (-1.0 - t) * inv_a
                e2 = (1.0 - t) * inv_a
                if first:
                    lo[r] = _mn(e1, e2)
                    hi[r] = _mx(e1, e2)
                else:
                    lo[r] = _mx(lo[r], _mn(e1, e2))
                    hi[r] = _mn(hi[r], _mx(e1, e2))
            first = False
        if l0 - 0.5 * (abs(la) + abs(lb)) <= 1e-12 * abs(l0):
            pos = la >= 0
            inv_a = 1.0 / (1e-30 if abs(la) < 1e-30 else la)
            for r in range(k):
                e = -(lb * rows[r] + l0) * inv_a
                if pos:
                    lo[r] = _mx(lo[r], e)
                else:
                    hi[r] = _mn(hi[r], e)
        word = np.uint64(0)
        for r in range(k):
            cl = np.ceil((lo[r] + 0.5) * k - 0.5)
            cl = min(max(cl, 0.0), float(k))
            ch = np.floor((hi[r] + 0.5) * k - 0.5)
            ch = min(max(ch, -1.0), float(k - 1))
            idx = int(cl * (k + 1) + ch + 1)
            word |= np.uint64(tab[idx]) << np.uint64(8 * r)
        lost[pos_of[ii]] |= word


def patched_mirror_occlusion(s, fr, cT, st, shade, blk, rows, pos_of, lost):
    si, sj, sd0 = H._shading_pairs_at(shade, s)
    sx, sy, sz = float(s[0]), float(s[1]), float(s[2])
    per_j = (
        H._dot3(fr.n[0], fr.n[1], fr.n[2], sx, sy, sz),
        fr.ej[0] * sx + fr.ej[1] * sy,
        H._dot3(fr.hj[0], fr.hj[1], fr.hj[2], sx, sy, sz),
    )
    k = rows.shape[0]
    tab = H._span_table(k)
    e = np.empty(0)
    args = (
        fr.n[0],
        fr.n[1],
        fr.n[2],
        fr.ej[0],
        fr.ej[1],
        fr.hj[0],
        fr.hj[1],
        fr.hj[2],
        fr.wv[0],
        fr.wv[1],
        fr.hv[0],
        fr.hv[1],
        fr.hv[2],
        rows,
        tab,
        k,
        pos_of,
        lost,
    )
    occl_kernel(si, sj, *sd0, e, e, e, True, *per_j, *args)
    bi, bj, bd0, br = blk
    occl_kernel(bi, bj, *bd0, *br, False, e, e, e, *args)


@nb.njit(cache=CACHE)
def ray_kernel(cu, cv, sin_e, lim, basis, rad, rest, kws, sbt, sb, nrays):
    """Per mirror in `rest`: the ray word (u, v summed in index order), then the share."""
    R = basis.shape[1]
    for q in range(rest.shape[0]):
        m = rest[q]
        w = np.uint64(0)
        for r in range(R):
            u = 0.0
            v = 0.0
            for c in range(8):
                u += cu[q, c] * basis[c, r]
                v += cv[q, c] * basis[c, r]
            qq = rad * rad - u * u
            if qq >= 0 and abs(v - np.sqrt(qq) * sin_e[q]) <= lim[q]:
                w |= np.uint64(1) << np.uint64(r)
        kw = kws[q]
        nk = 0
        hk = 0
        tot = 0
        x = kw
        # popcounts
        a = w & kw
        while x:
            x &= x - np.uint64(1)
            nk += 1
        while a:
            a &= a - np.uint64(1)
            hk += 1
        y = w
        while y:
            y &= y - np.uint64(1)
            tot += 1
        share = hk / max(nk, 1) if nk > 0 else tot / nrays
        sbt[m] = sb[m] * share


def simulate_nb(f, site=None, num=None, nb_rays=False):
    site = site or H.Site()
    num = num or H.Numerics()
    k = num.grid
    mom, _sets = H._task_geometry(site, num)
    st = H._static(f, site)
    ti = np.arange(f.n)
    nt = ti.shape[0]
    cap = num.max_candidates_per_mirror * max(nt, 1) + 10_000
    pos_of = np.full(f.n, -1, np.int64)
    pos_of[ti] = np.arange(nt)
    alpha, beta = H._grid(k)
    rows = H._grid_rows(k)
    sets = H.ray_sets(num)
    nsets = len(sets)
    rad = 0.5 * site.collector_diameter_m
    chunk = max(16, 16384 // num.rays)
    nrays = num.rays
    tables = H._kept_tables(num)
    full_word = np.uint64(sum(((1 << k) - 1) << (8 * r) for r in range(k)))
    classes = H._classes(st)
    cT = np.ascontiguousarray(st.c.T)
    shade = H._shade_list(cT, st, ti, cap, H._size_classes(st), float(mom.sun[:, 2].min()))
    blk = H._blocking_static(f, st, site, cT, ti, cap, classes)
    img = H._image_static(st, site, ti)
    sin_e, lim = img[-2], img[-1]
    area = f.area[ti]
    total_area = float(area.sum())
    T = mom.sun.shape[0]
    eta_t, cos_t, sb_t, tr_t, at_t, pw_t = (np.zeros(T) for _ in range(6))
    at_i = st.at[ti]
    with np.errstate(invalid="ignore"):
        for t in range(T):
            s = mom.sun[t]
            alt = float(mom.altitude[t])
            o = H._orient(s, st)
            fr = H._frame_of(o, f)
            cos_i = np.ascontiguousarray(fr.n.T[ti]) @ s
            lost = np.zeros(nt, np.uint64)
            patched_mirror_occlusion(s, fr, cT, st, shade, blk, rows, pos_of, lost)
            wi, whit = H._tower_shade(s, alt, f, st, site, o, fr, ti, alpha, beta)
            np.bitwise_or.at(lost, pos_of[wi], H._pack_words(whit, k))
            keepw = full_word & ~lost
            sb = np.bitwise_count(keepw).astype(np.int64) / (k * k)
            keep = keepw.view(np.uint8).reshape(nt, 8).astype(np.intp)
            sbt = sb.copy()
            rs = sets[t % nsets]
            parts = H._image_parts(img, fr, ti)
            full_in = H._all_in(parts, sin_e, lim, rs.bound, rad)
            rest = np.flatnonzero(~full_in & (sb > 0))
            cu, cv = H._image_matrix(parts, rest)
            tab = tables[t % nsets]
            kw = tab[0][keep[:, 0]]
            for rr in range(1, k):
                kw |= tab[rr][keep[:, rr]]
            if nb_rays:
                ray_kernel(
                    cu, cv, sin_e[rest], lim[rest], rs.basis, rad, rest, kw[rest], sbt, sb, nrays
                )
            else:
                nr = rest.shape[0]
                cu_r, cv_r, se_r, lim_r = cu, cv, sin_e[rest], lim[rest]
                rw = np.empty(nr, np.uint64)
                for a in range(0, nr, chunk):
                    b = a + chunk + (1 if nr - (a + chunk) == 1 else 0)
                    if a > 0 and nr - a == 1:
                        continue
                    rw[a:b] = H._ray_words(
                        cu_r[a:b], cv_r[a:b], se_r[a:b], lim_r[a:b], rs.basis, rad
                    )
                kws = kw[rest]
                nk = np.bitwise_count(kws).astype(np.int64)
                hit_kept = np.bitwise_count(rw & kws).astype(np.int64)
                total = np.bitwise_count(rw).astype(np.int64)
                share = np.where(nk > 0, hit_kept / np.maximum(nk, 1), total / nrays)
                sbt[rest] = sb[rest] * share
            trunc = np.divide(sbt, sb, out=np.ones_like(sbt), where=sb > 0)
            eta = sbt * cos_i * at_i * site.reflectivity
            eta_t[t] = (area * eta).sum() / total_area
            cos_t[t] = (area * cos_i).sum() / total_area
            sb_t[t] = (area * sb).sum() / total_area
            tr_t[t] = (area * trunc).sum() / total_area
            at_t[t] = (area * at_i).sum() / total_area
            pw_t[t] = mom.dni[t] * (area * eta).sum() / 1000.0
    return H.Performance(
        eta=eta_t, cos=cos_t, sb=sb_t, trunc=tr_t, at=at_t, power_mw=pw_t, total_area=total_area
    )


def main():
    task = load_task(TASKS_ROOT / "CUMCM" / "cumcm-2023-a-heliostat-field")
    texts = {"anchor": task.anchor_artifact_bytes().decode()}
    if "--largest" in sys.argv:
        texts.update(B.largest_fields())
    print(f"import numba: {t_imp:.3f} s CPU")
    d0 = H.parse_design(read_artifact(texts["anchor"], task.caps), "q2", 10**6)
    c = time.process_time()
    simulate_nb(d0.field, nb_rays=True)
    print(f"first call (compile or cache load): {time.process_time() - c:.3f} s CPU")
    for name, text in texts.items():
        doc = read_artifact(text, task.caps)
        fields = [H.parse_design(doc, q, 10**6).field for q in ("q2", "q3")]
        tv1 = tnp = tnb = tnb2 = 0.0
        same_occ = same_all = True
        maxrel = 0.0
        for _ in range(int(os.environ.get("ROUNDS", "3"))):
            for fld in fields:
                c0 = time.process_time()
                a = R.simulate(fld)
                c1 = time.process_time()
                H.simulate(fld)
                c2 = time.process_time()
                x = simulate_nb(fld)
                c3 = time.process_time()
                y = simulate_nb(fld, nb_rays=True)
                c4 = time.process_time()
                tv1 += c1 - c0
                tnp += c2 - c1
                tnb += c3 - c2
                tnb2 += c4 - c3
                same_occ &= a.annual == x.annual
                same_all &= a.annual == y.annual
                for kk in a.annual:
                    maxrel = max(maxrel, abs(a.annual[kk] - y.annual[kk]) / abs(a.annual[kk]))
        print(
            f"{name}: v1 {tv1:.2f}  numpy {tnp:.2f} ({tv1 / tnp:.1f}x)  numba occlusion {tnb:.2f} ({tv1 / tnb:.1f}x, same={same_occ})  numba occlusion+rays {tnb2:.2f} ({tv1 / tnb2:.1f}x, same={same_all}, max rel diff {maxrel:.1e})"
        )


main()
