/* Body of the tile kernel, included once per instruction set by _tile.h with HD_SFX
 * defined (a suffix for every function name).  No include guard on purpose.
 *
 * One query row against nb reference rows stored attribute-major (R->ld apart): the
 * inner loops run across reference rows, so the compiler vectorizes them.  Every pair
 * gets exactly the floating-point operations of pair_reduced (_kernels.pxd), in the same
 * order: terms are selected (never mixed) by masks, and a skipped term adds +0.0, which
 * leaves a non-negative sum unchanged.
 */

/* pm: 0 p = inf, 1 p = 1, 2 p = 2, 3 other p (hd_pw_gen), 4 p = 0.5 (hd_pw_gen's sqrt,
 * spelled out so that it is vectorized) */
#define HD_PW(d) (pm == 2 ? (d) * (d) : (pm == 3 ? hd_pw_gen((d), P->p) : \
                                        (pm == 4 ? sqrt(d) : (d))))
#define HD_ACC(s, t) (pm == 0 ? ((t) > (s) ? (t) : (s)) : (s) + (t))

/* 1 when every partial sum exceeds bound (the rows can be abandoned) */
static HD_INLINE int HD_SFX(hd_all_above)(const double *s, hd_intp nb, double bound)
{
    hd_intp j;
    int low = 0;
    for (j = 0; j < nb; j++)
        low |= !(s[j] > bound);
    return !low;
}

/* continuous terms of present values: out[j] = cw * pw(|x - y[j]| * ci) */
static HD_INLINE void HD_SFX(hd_cont_terms)(const hd_tplan *P, double *out, const double *y,
                                            double x, double ci, double cw, hd_intp nb,
                                            const int pm)
{
    hd_intp j;
    for (j = 0; j < nb; j++) {
        double d = fabs(x - y[j]) * ci;
        double t = HD_PW(d);
        out[j] = cw * t;
    }
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
    const hd_intp ld = R->ld;
    hd_intp a, j, c;
    hd_ignst g;
    g.kw = kw;
    g.ns = ns;
    g.uni = 1;
    g.K = 0.0;
    g.NS = 0.0;
    for (j = 0; j < nb; j++)
        s[j] = 0.0;
    /* continuous block */
    if (P->mc) {
        for (a = 0; a < P->mc; a++) {
            const double *y = R->c + a * ld + j0;
            const double *yp = R->cpen + a * ld + j0;
            const double x = Q->c[a];
            const double ci = P->c_inv[a], cw = P->c_tw[a];
            if (!ign) {
                if (x == x) {
                    const double xp = Q->cpen[a];
#if HD_MASKED
                    for (j = 0; j < nb; j++) {
                        double yj = y[j];
                        double d = fabs(x - yj) * ci;
                        double t = HD_PW(d);
                        t = cw * t;
                        t = (yj == yj) ? t : xp;
                        s[j] = HD_ACC(s[j], t);
                    }
#else
                    /* two passes (terms, then selection): one loop with both is
                     * if-converted only with AVX-512's masks */
                    HD_SFX(hd_cont_terms)(P, nrm, y, x, ci, cw, nb, pm);
                    for (j = 0; j < nb; j++) {
                        double t = (y[j] == y[j]) ? nrm[j] : xp;
                        s[j] = HD_ACC(s[j], t);
                    }
#endif
                } else {
                    const double cb = P->c_both[a];
                    for (j = 0; j < nb; j++) {
                        double t = (y[j] == y[j]) ? yp[j] : cb;
                        s[j] = HD_ACC(s[j], t);
                    }
                }
            } else {
                const int skip_ok = P->c_ign[a];
                const double rw = P->c_rw[a];
                int ymiss = 0;
                if (x == x && g.uni) {
                    for (j = 0; j < nb; j++)
                        ymiss |= y[j] != y[j];
                }
                if (x == x && g.uni && !ymiss) {
                    /* every value present: kw, ns unchanged for every row */
                    for (j = 0; j < nb; j++) {
                        double d = fabs(x - y[j]) * ci;
                        double t = HD_PW(d);
                        t = cw * t;
                        s[j] = HD_ACC(s[j], t);
                    }
                    g.K += rw;
                } else if (x == x) {
                    /* a missing y: skipped (term +0, weight +0, one more skip) or the
                     * query's penalty; both are constants of the attribute, so every
                     * selection is a blend of two values */
                    const double tm = skip_ok ? 0.0 : Q->cpen[a];
                    const double km = skip_ok ? 0.0 : rw, nm = skip_ok ? 1.0 : 0.0;
                    HD_SFX(hd_ign_split)(&g, nb);
#if HD_MASKED
                    for (j = 0; j < nb; j++) {
                        double yj = y[j];
                        double d = fabs(x - yj) * ci;
                        double t = HD_PW(d);
                        int yin = yj == yj;
                        t = cw * t;
                        s[j] = HD_ACC(s[j], yin ? t : tm);
                        kw[j] += yin ? rw : km;
                        ns[j] += yin ? 0.0 : nm;
                    }
#else
                    HD_SFX(hd_cont_terms)(P, nrm, y, x, ci, cw, nb, pm);
                    for (j = 0; j < nb; j++) {
                        double yj = y[j], t = nrm[j];
                        s[j] = HD_ACC(s[j], yj == yj ? t : tm);
                        kw[j] += yj == yj ? rw : km;
                        ns[j] += yj == yj ? 0.0 : nm;
                    }
#endif
                } else if (skip_ok) {
                    HD_SFX(hd_ign_add)(&g, nb, 0.0, 1.0);
                } else {
                    const double cb = P->c_both[a];
                    for (j = 0; j < nb; j++) {
                        double t = (y[j] == y[j]) ? yp[j] : cb;
                        s[j] = HD_ACC(s[j], t);
                    }
                    HD_SFX(hd_ign_add)(&g, nb, rw, 0.0);
                }
            }
        }
        if (HD_SFX(hd_all_above)(s, nb, cut))
            return 1;
    }
    /* overlap block: equality of integer codes, any cardinality */
    if (P->mo) {
        for (a = 0; a < P->mo; a++) {
            const int *y = R->o + a * ld + j0;
            const int cx = Q->o[a];
            const double w = P->o_w[a], miss = P->o_miss[a];
            if (!ign) {
                if (cx >= 0) {
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        double t = cy < 0 ? miss : (cy != cx ? w : 0.0);
                        s[j] = HD_ACC(s[j], t);
                    }
                } else {
                    for (j = 0; j < nb; j++)
                        s[j] = HD_ACC(s[j], miss);
                }
            } else {
                const int skip_ok = P->o_ign[a];
                const double rw = P->o_rw[a];
                int ymiss = 0;
                if (cx >= 0 && g.uni) {
                    for (j = 0; j < nb; j++)
                        ymiss |= y[j] < 0;
                }
                if (cx >= 0 && g.uni && !ymiss) {
                    for (j = 0; j < nb; j++) {
                        double t = y[j] != cx ? w : 0.0;
                        s[j] = HD_ACC(s[j], t);
                    }
                    g.K += rw;
                } else if (cx >= 0) {
                    /* as in the continuous block: blends of per-attribute constants */
                    const double tm = skip_ok ? 0.0 : miss;
                    const double km = skip_ok ? 0.0 : rw, nm = skip_ok ? 1.0 : 0.0;
                    HD_SFX(hd_ign_split)(&g, nb);
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        double t = cy != cx ? w : 0.0;
                        s[j] = HD_ACC(s[j], cy >= 0 ? t : tm);
                        kw[j] += cy >= 0 ? rw : km;
                        ns[j] += cy >= 0 ? 0.0 : nm;
                    }
                } else {
                    HD_SFX(hd_query_missing)(s, &g, nb, ign, skip_ok, miss, rw, pm);
                }
            }
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
                    nrm[j] = row[cy < 0 ? 0 : (cy < V ? cy : V)];
                }
                if (!ign) {
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        double t = nrm[j];
                        t = (unseen & (cy == cx)) ? 0.0 : t;
                        t = cy >= 0 ? t : miss;
                        s[j] = HD_ACC(s[j], t);
                    }
                } else {
                    HD_SFX(hd_ign_split)(&g, nb);
                    for (j = 0; j < nb; j++) {
                        int cy = y[j];
                        int yin = cy >= 0;
                        int sk = (!yin) & skip_ok;
                        double t = nrm[j];
                        t = (unseen & (cy == cx)) ? 0.0 : t;
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
                        for (j = 0; j < nb; j++) {
                            double dlt = xc - yc[j];
                            nrm[j] += dlt * dlt;
                        }
                    } else {
                        for (j = 0; j < nb; j++)
                            nrm[j] += fabs(xc - yc[j]);
                    }
                }
                if (ign)
                    HD_SFX(hd_ign_split)(&g, nb);
                for (j = 0; j < nb; j++) {
                    double n = nrm[j], t;
                    int yin = y0[j] == y0[j];
                    int sk = (!yin) & skip_ok;
                    if (q2 && pm == 2)
                        t = n;
                    else if (q2) {
                        double r = sqrt(n);
                        t = HD_PW(r);
                    } else
                        t = HD_PW(n);
                    t = rw * t;
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
                for (j = 0; j < nb; j++) {
                    double v = s[j];
                    if (g.K > 0.0)
                        v = pm == 0 ? v : v * (w_all / g.K);
                    else
                        v = pm == 0 ? w_max : w_all;
                    s[j] = v;
                }
            }
            return 0;
        }
        for (j = 0; j < nb; j++) {
            double v = s[j];
            if (ns[j] > 0.0) {
                if (kw[j] > 0.0)
                    v = pm == 0 ? v : v * (w_all / kw[j]);
                else
                    v = pm == 0 ? w_max : w_all;
            }
            s[j] = v;
        }
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
#undef HD_TILE_ENTRY

#undef HD_PW
#undef HD_ACC
