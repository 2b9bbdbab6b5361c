/* Body of the tile kernel, included once per instruction set by tile.h with HD_SFX
 * defined (a suffix for every function name).  No include guard on purpose.
 *
 * One query row against nb reference rows stored attribute-major (R->ld apart): the
 * inner loops run across reference rows, so the compiler vectorizes them.  Every pair
 * gets exactly the floating-point operations of pair_reduced (_kernels/plan.pxd), in the same
 * order: terms are selected (never mixed) by masks, and a skipped term adds +0.0, which
 * leaves a non-negative sum unchanged.
 */

/* pm: 0 p = inf, 1 p = 1, 2 p = 2, 3 other p (hd_pw_gen), 5 p = 3 and 6 p = 4 (hd_pw_gen's
 * products, spelled out so that they are vectorized), 4 p = 0.5 (hd_pw_gen's sqrt,
 * spelled out so that it is vectorized).  The terms themselves are terms.h's functions,
 * shared with the device kernels (hdist/_kernels/cuda/knn.cu). */
#define HD_ACC(s, t) hd_acc_pm((s), (t), pm)

/* 1 when every partial sum exceeds bound (the rows can be abandoned) */
static HD_INLINE int HD_SFX(hd_all_above)(const double *s, hd_intp nb, double bound)
{
    hd_intp j;
    int low = 0;
    for (j = 0; j < nb; j++)
        low |= !(s[j] > bound);
    return !low;
}

/* Under "ignore", kw[j] (the known weight, summed in attribute order) and ns[j] (the
 * skipped count) of every row stay one value K, NS while no row has skipped or been
 * skipped differently from the others: the arrays are filled only from the first
 * attribute where rows differ (hd_ign_split), and a tile without missing values never
 * touches them. */
static HD_INLINE void HD_SFX(hd_ign_split)(hd_ignst *g, hd_intp nb)
{
    hd_intp j;
    if (!g->uni)
        return;
    for (j = 0; j < nb; j++) {
        g->kw[j] = g->K;
        g->ns[j] = g->NS;
    }
    g->uni = 0;
}

/* every row adds the same known weight and skipped count */
static HD_INLINE void HD_SFX(hd_ign_add)(hd_ignst *g, hd_intp nb, double w, double n)
{
    hd_intp j;
    if (g->uni) {
        g->K += w;
        g->NS += n;
        return;
    }
    for (j = 0; j < nb; j++) {
        g->kw[j] += w;
        g->ns[j] += n;
    }
}

/* the query's value is missing: every row gets the same term (or skips it) */
static HD_INLINE void HD_SFX(hd_query_missing)(double *s, hd_ignst *g, hd_intp nb, int ign,
                                               int skip_ok, double miss, double rw,
                                               const int pm)
{
    hd_intp j;
    if (skip_ok) {
        HD_SFX(hd_ign_add)(g, nb, 0.0, 1.0);
        return;
    }
    for (j = 0; j < nb; j++)
        s[j] = HD_ACC(s[j], miss);
    if (ign)
        HD_SFX(hd_ign_add)(g, nb, rw, 0.0);
}


/* Fused runs of attributes: r consecutive attributes of one block whose query values are
 * present, handled in one pass over the rows, so that s (and, under "ignore", kw and ns)
 * of a row stays in a register across the r attributes instead of being loaded and stored
 * once per attribute.  Each row still gets acc(...acc(acc(s, t0), t1)..., t_{r-1}), the
 * operations of pair_reduced in its order (a term of +0.0 is left out: s + 0 = max(s, 0)
 * = s for s >= 0); kw sums the weights in attribute order too.  r is a constant in every
 * call (HD_RUN_DISPATCH), so the loop over u is unrolled.  mode:
 *   HD_PLAIN  no bookkeeping: a missing reference value gets the query's penalty tm;
 *   HD_SKIP   "ignore" on every attribute of the run: a missing reference value is
 *             skipped (no term, no weight, one more skip);
 *   HD_KEEP   "ignore" elsewhere, not on these attributes: every row adds the weight;
 *   HD_SAME   (overlap) as HD_PLAIN with tm = w: every code unlike the query's adds w;
 *   HD_SKIPN  HD_SKIP without the known weight (P->ign_unit: it follows from the skipped
 *             count at the end, and HD_KEEP becomes HD_PLAIN). */
#define HD_RUN 4
#define HD_PLAIN 0
#define HD_SKIP 1
#define HD_KEEP 2
#define HD_SAME 3
#define HD_SKIPN 4

/* continuous attributes a .. a + r - 1 */
static HD_INLINE void HD_SFX(hd_cont_run)(const hd_tplan *P, const hd_tq *Q, const hd_tr *R,
                                          hd_intp j0, hd_intp nb, hd_intp a,
                                          double *HD_RESTRICT s, double *HD_RESTRICT kw,
                                          double *HD_RESTRICT ns, const int r,
                                          const int mode, const int pm)
{
    const double *HD_RESTRICT y[HD_RUN];
    double x[HD_RUN], ci[HD_RUN], cw[HD_RUN], tm[HD_RUN], rw[HD_RUN];
    hd_intp j;
    int u;
    for (u = 0; u < r; u++) {
        y[u] = R->c + (a + u) * R->ld + j0;
        x[u] = Q->c[a + u];
        ci[u] = P->c_inv[a + u];
        cw[u] = P->c_tw[a + u];
        tm[u] = Q->cpen[a + u];
        rw[u] = P->c_rw[a + u];
    }
    for (j = 0; j < nb; j++) {
        double sj = s[j], kj = 0.0, nj = 0.0;
        if (mode == HD_SKIP || mode == HD_KEEP)
            kj = kw[j];
        if (mode == HD_SKIP || mode == HD_SKIPN)
            nj = ns[j];
        for (u = 0; u < r; u++) {
            double yj = y[u][j];
            double t = hd_cont_term(x[u], yj, ci[u], cw[u], pm, P->p);
            int yin = yj == yj;
            if (mode == HD_SKIP || mode == HD_SKIPN) {
                sj = yin ? HD_ACC(sj, t) : sj;
                if (mode == HD_SKIP)
                    kj = yin ? kj + rw[u] : kj;
                nj = yin ? nj : nj + 1.0;
            } else {
                sj = HD_ACC(sj, yin ? t : tm[u]);
                if (mode == HD_KEEP)
                    kj += rw[u];
            }
        }
        s[j] = sj;
        if (mode == HD_SKIP || mode == HD_KEEP)
            kw[j] = kj;
        if (mode == HD_SKIP || mode == HD_SKIPN)
            ns[j] = nj;
    }
}

/* overlap attributes a .. a + r - 1 (query codes >= 0, so an equal code is present) */
static HD_INLINE void HD_SFX(hd_over_run)(const hd_tplan *P, const hd_tq *Q, const hd_tr *R,
                                          hd_intp j0, hd_intp nb, hd_intp a,
                                          double *HD_RESTRICT s, double *HD_RESTRICT kw,
                                          double *HD_RESTRICT ns, const int r,
                                          const int mode, const int pm)
{
    const int *HD_RESTRICT y[HD_RUN];
    int cx[HD_RUN];
    double w[HD_RUN], tm[HD_RUN], rw[HD_RUN];
    hd_intp j;
    int u;
    for (u = 0; u < r; u++) {
        y[u] = R->o + (a + u) * R->ld + j0;
        cx[u] = Q->o[a + u];
        w[u] = P->o_w[a + u];
        tm[u] = P->o_miss[a + u];
        rw[u] = P->o_rw[a + u];
    }
    for (j = 0; j < nb; j++) {
        double sj = s[j], kj = 0.0, nj = 0.0;
        if (mode == HD_SKIP || mode == HD_KEEP)
            kj = kw[j];
        if (mode == HD_SKIP || mode == HD_SKIPN)
            nj = ns[j];
        for (u = 0; u < r; u++) {
            int cy = y[u][j];
            int yin = cy >= 0, neq = cy != cx[u];
            if (mode == HD_SAME) {
                sj = neq ? HD_ACC(sj, w[u]) : sj;
            } else if (mode == HD_SKIP || mode == HD_SKIPN) {
                sj = (neq & yin) ? HD_ACC(sj, w[u]) : sj;
                if (mode == HD_SKIP)
                    kj = yin ? kj + rw[u] : kj;
                nj = yin ? nj : nj + 1.0;
            } else {
                sj = neq ? HD_ACC(sj, yin ? w[u] : tm[u]) : sj;
                if (mode == HD_KEEP)
                    kj += rw[u];
            }
        }
        s[j] = sj;
        if (mode == HD_SKIP || mode == HD_KEEP)
            kw[j] = kj;
        if (mode == HD_SKIP || mode == HD_SKIPN)
            ns[j] = nj;
    }
}

/* one run of r (1 .. HD_RUN) attributes, r made a constant of each call */
#define HD_RUN_DISPATCH(fn, r, mode)                                              \
    do {                                                                          \
        switch (r) {                                                              \
        case 1: fn(P, Q, R, j0, nb, a, s, kw, ns, 1, mode, pm); break;            \
        case 2: fn(P, Q, R, j0, nb, a, s, kw, ns, 2, mode, pm); break;            \
        case 3: fn(P, Q, R, j0, nb, a, s, kw, ns, 3, mode, pm); break;            \
        default: fn(P, Q, R, j0, nb, a, s, kw, ns, 4, mode, pm); break;           \
        }                                                                         \
    } while (0)

/* 1 when some row misses the reference value of a continuous attribute a .. a + r - 1 */
static HD_INLINE int HD_SFX(hd_cont_any_missing)(const hd_tr *R, hd_intp j0, hd_intp nb,
                                                 hd_intp a, int r)
{
    hd_intp j;
    int u, m = 0;
    for (u = 0; u < r; u++) {
        const double *y = R->c + (a + u) * R->ld + j0;
        for (j = 0; j < nb; j++)
            m |= y[j] != y[j];
    }
    return m;
}

/* the same for overlap attributes */
static HD_INLINE int HD_SFX(hd_over_any_missing)(const hd_tr *R, hd_intp j0, hd_intp nb,
                                                 hd_intp a, int r)
{
    hd_intp j;
    int u, m = 0;
    for (u = 0; u < r; u++) {
        const int *y = R->o + (a + u) * R->ld + j0;
        for (j = 0; j < nb; j++)
            m |= y[j] < 0;
    }
    return m;
}

/* rows per group of the final "ignore" rescale */
#define HD_RS 8

/* 1 when a row of s[0..n) skipped some attribute and does not exceed cut */
static HD_INLINE int HD_SFX(hd_rescale_needed)(const double *s, const double *ns,
                                               const hd_intp n, double cut)
{
    hd_intp j;
    int need = 0;
    for (j = 0; j < n; j++)
        need |= (ns[j] > 0.0) & !(s[j] > cut);
    return need;
}

/* the "ignore" rule (docs/metrics.md, section 6) on rows s[0..n), as rescale_ignore */
static HD_INLINE void HD_SFX(hd_rescale)(double *HD_RESTRICT s, const double *HD_RESTRICT kw,
                                         const double *HD_RESTRICT ns, const hd_intp n,
                                         double w_all, double w_max, const int pm,
                                         const hd_tplan *P)
{
    hd_intp j;
    for (j = 0; j < n; j++) {
        double v = s[j];
        /* P->ign_unit: the known weight is the whole less the skipped ones (every partial
         * sum a multiple of ign_w, exact) */
        double k = P->ign_unit ? P->ign_all - P->ign_w * ns[j] : kw[j];
        if (ns[j] > 0.0)
            v = hd_rescale_one(v, k, w_all, w_max, pm);
        s[j] = v;
    }
}

static HD_INLINE int HD_SFX(hd_tile_pm)(const hd_tplan *P, const hd_tq *Q, const hd_tr *R,
                                        hd_intp j0, hd_intp nb, double bound, double *s,
                                        const int pm)
{
    double kw[HD_TB], ns[HD_TB], nrm[HD_TB];
    const int ign = P->ign;
    /* Rows whose partial sums all exceed cut are abandoned.  Under "ignore" the final
     * value is s * (w_all / kw) with kw a (rounded) sum of a subset of the weights, so
     * w_all / kw >= 1 up to a few ulps per attribute: the margin keeps every row whose
     * final value could reach bound. */
    const double cut = ign ? bound * (1.0 + 1e-10) : bound;
    const int unit = ign && P->ign_unit;
    const hd_intp ld = R->ld;
    hd_intp a, j, c, jb;
    hd_ignst g;
    g.kw = kw;
    g.ns = ns;
    g.uni = 1;
    g.K = 0.0;
    g.NS = 0.0;
    for (j = 0; j < nb; j++)
        s[j] = 0.0;
    /* continuous block: runs of attributes with the query's value present are fused */
    if (P->mc) {
        a = 0;
        while (a < P->mc) {
            if (Q->c[a] == Q->c[a]) {
                /* a run: query values present and, under "ignore", one policy */
                const int sk = ign && P->c_ign[a];
                int r = 1, u;
                while (r < HD_RUN && a + r < P->mc && Q->c[a + r] == Q->c[a + r]
                       && (!ign || (P->c_ign[a + r] != 0) == sk))
                    r++;
                if (!ign) {
                    HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_PLAIN);
                } else if (g.uni && (!sk || !HD_SFX(hd_cont_any_missing)(R, j0, nb, a, r))) {
                    /* every row adds the same weights, skips nothing */
                    HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_PLAIN);
                    for (u = 0; u < r; u++)
                        g.K += P->c_rw[a + u];
                } else {
                    HD_SFX(hd_ign_split)(&g, nb);
                    if (sk && unit)
                        HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_SKIPN);
                    else if (sk)
                        HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_SKIP);
                    else if (unit)
                        HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_PLAIN);
                    else
                        HD_RUN_DISPATCH(HD_SFX(hd_cont_run), r, HD_KEEP);
                }
                a += r;
                continue;
            }
            /* the query's value is missing */
            if (ign && P->c_ign[a]) {
                HD_SFX(hd_ign_add)(&g, nb, 0.0, 1.0);
            } else {
                const double *y = R->c + a * ld + j0;
                const double *yp = R->cpen + a * ld + j0;
                const double cb = P->c_both[a];
                for (j = 0; j < nb; j++) {
                    double t = (y[j] == y[j]) ? yp[j] : cb;
                    s[j] = HD_ACC(s[j], t);
                }
                if (ign)
                    HD_SFX(hd_ign_add)(&g, nb, P->c_rw[a], 0.0);
            }
            a++;
        }
        if (HD_SFX(hd_all_above)(s, nb, cut))
            return 1;
    }
    /* overlap block: equality of integer codes, any cardinality; fused as above */
    if (P->mo) {
        a = 0;
        while (a < P->mo) {
            if (Q->o[a] >= 0) {
                const int sk = ign && P->o_ign[a];
                int r = 1, u, same = 1;
                while (r < HD_RUN && a + r < P->mo && Q->o[a + r] >= 0
                       && (!ign || (P->o_ign[a + r] != 0) == sk))
                    r++;
                for (u = 0; u < r; u++)
                    same &= P->o_miss[a + u] == P->o_w[a + u];
                if (!ign || (g.uni && (!sk || !HD_SFX(hd_over_any_missing)(R, j0, nb, a, r)))) {
                    if (same)
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_SAME);
                    else
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_PLAIN);
                    if (ign)
                        for (u = 0; u < r; u++)
                            g.K += P->o_rw[a + u];
                } else {
                    HD_SFX(hd_ign_split)(&g, nb);
                    if (sk && unit)
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_SKIPN);
                    else if (sk)
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_SKIP);
                    else if (unit && same)
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_SAME);
                    else if (unit)
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_PLAIN);
                    else
                        HD_RUN_DISPATCH(HD_SFX(hd_over_run), r, HD_KEEP);
                }
                a += r;
                continue;
            }
            HD_SFX(hd_query_missing)(s, &g, nb, ign, ign & P->o_ign[a], P->o_miss[a],
                                     P->o_rw[a], pm);
            a++;
        }
        if (HD_SFX(hd_all_above)(s, nb, cut))
            return 1;
    }
    /* table block: one row of the table per query value, gathered by the reference codes */
    if (P->mt) {
        for (a = 0; a < P->mt; a++) {
            const int *y = R->t + a * ld + j0;
            const int cx = Q->t[a];
            const int V = P->t_V[a];
            const double miss = P->t_miss[a];
            const int skip_ok = ign & P->t_ign[a];
            const double rw = P->t_rw[a];
            if (cx >= 0) {
                const double *row = P->t_tab + P->t_off[a] + (hd_intp)(cx < V ? cx : V) * (V + 1);
                const int unseen = cx >= V;
                for (j = 0; j < nb; j++) {
                    int cy = y[j];
                    nrm[j] = row[hd_tab_col(cy, V)];
                }
                if (!ign) {
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        double t = hd_tab_sel(nrm[j], unseen, cx, cy);
                        t = cy >= 0 ? t : miss;
                        s[j] = HD_ACC(s[j], t);
                    }
                } else {
                    HD_SFX(hd_ign_split)(&g, nb);
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        int yin = cy >= 0;
                        int sk = (!yin) & skip_ok;
                        double t = hd_tab_sel(nrm[j], unseen, cx, cy);
                        t = yin ? t : (sk ? 0.0 : miss);
                        s[j] = HD_ACC(s[j], t);
                        kw[j] += sk ? 0.0 : rw;
                        ns[j] += sk ? 1.0 : 0.0;
                    }
                }
            } else {
                HD_SFX(hd_query_missing)(s, &g, nb, ign, skip_ok, miss, rw, pm);
            }
        }
        if (HD_SFX(hd_all_above)(s, nb, cut))
            return 1;
    }
    /* embedded block: vector norms accumulated coordinate by coordinate */
    if (P->me) {
        for (a = 0; a < P->me; a++) {
            const hd_intp off = P->e_off[a], dim = P->e_off[a + 1] - P->e_off[a];
            const double *x = Q->e + off;
            const double *y0 = R->e + off * ld + j0;
            const int q2 = P->e_q[a] == 2;
            const double miss = P->e_miss[a];
            const int skip_ok = ign & P->e_ign[a];
            const double rw = P->e_rw[a];
            if (x[0] == x[0]) {
                for (j = 0; j < nb; j++)
                    nrm[j] = 0.0;
                for (c = 0; c < dim; c++) {
                    const double xc = x[c];
                    const double *yc = R->e + (off + c) * ld + j0;
                    if (q2) {
                        for (j = 0; j < nb; j++)
                            nrm[j] = hd_emb_q2(nrm[j], xc, yc[j]);
                    } else {
                        for (j = 0; j < nb; j++)
                            nrm[j] = hd_emb_q1(nrm[j], xc, yc[j]);
                    }
                }
                if (ign)
                    HD_SFX(hd_ign_split)(&g, nb);
                for (j = 0; j < nb; j++) {
                    int yin = y0[j] == y0[j];
                    int sk = (!yin) & skip_ok;
                    double t = hd_emb_term(nrm[j], q2, rw, pm, P->p);
                    t = yin ? t : (sk ? 0.0 : miss);
                    s[j] = HD_ACC(s[j], t);
                    if (ign) {
                        kw[j] += sk ? 0.0 : rw;
                        ns[j] += sk ? 1.0 : 0.0;
                    }
                }
            } else {
                HD_SFX(hd_query_missing)(s, &g, nb, ign, skip_ok, miss, rw, pm);
            }
        }
    }
    if (ign) {
        /* the "ignore" rule (docs/metrics.md, section 6), as rescale_ignore */
        const double w_all = P->w_all, w_max = P->w_max;
        if (g.uni) {
            /* every row: ns = NS, kw = K */
            if (g.NS > 0.0) {
                for (j = 0; j < nb; j++)
                    s[j] = hd_rescale_one(s[j], g.K, w_all, w_max, pm);
            }
            return 0;
        }
        /* by groups of HD_RS rows: a group is left as it is when each of its rows either
         * skipped nothing or exceeds cut (rescaled it would exceed bound: the factor
         * w_all / kw is at least 1 up to the rounding cut allows for), which saves the
         * divisions of the many rows far from the query */
        for (jb = 0; jb + HD_RS <= nb; jb += HD_RS) {
            if (HD_SFX(hd_rescale_needed)(s + jb, ns + jb, HD_RS, cut))
                HD_SFX(hd_rescale)(s + jb, kw + jb, ns + jb, HD_RS, w_all, w_max, pm, P);
        }
        if (jb < nb)
            HD_SFX(hd_rescale)(s + jb, kw + jb, ns + jb, nb - jb, w_all, w_max, pm, P);
    }
    return 0;
}

/* one entry point per kind of p, so that the tests on pm are resolved at compile time */
#define HD_TILE_ENTRY(name, mode)                                                           \
    static int HD_SFX(name)(const hd_tplan *P, const hd_tq *Q, const hd_tr *R, hd_intp j0, \
                            hd_intp nb, double bound, double *s)                            \
    {                                                                                       \
        return HD_SFX(hd_tile_pm)(P, Q, R, j0, nb, bound, s, mode);                         \
    }
HD_TILE_ENTRY(hd_tile_inf, 0)
HD_TILE_ENTRY(hd_tile_l1, 1)
HD_TILE_ENTRY(hd_tile_l2, 2)
HD_TILE_ENTRY(hd_tile_gen, 3)
HD_TILE_ENTRY(hd_tile_half, 4)
HD_TILE_ENTRY(hd_tile_cube, 5)
HD_TILE_ENTRY(hd_tile_quart, 6)
#undef HD_TILE_ENTRY

#undef HD_ACC
