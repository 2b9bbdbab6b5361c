/* Cross-architecture check of the tile kernel (hdist/_kernels/tile.h).
 *
 * Fills a plan with every block (continuous, overlap, tables, embedded q = 1 and q = 2),
 * missing values on both sides and unseen codes, and prints the reduced distances of every
 * query against every reference row as hexadecimal floats, for each p (inf, 1, 2; 0.5 and 3
 * through the general entry; 3 and 4 through their own)
 * with and without the "ignore" rule.  The output must be identical on every instruction
 * set of this machine (argument: the variant number) and on every architecture
 * (ci/arm64_check.sh runs it for aarch64 under qemu and compares).
 *
 * The data come from a fixed linear congruential generator, so every platform sees the
 * same inputs.
 *
 * Build it with the files of the other variants (baseline x86-64 is in tile.h):
 *     cc -O3 ... -Ihdist/_kernels ci/tile_check.c hdist/_kernels/isa/tile_avx2.c \
 *        hdist/_kernels/isa/tile_avx512.c -lm
 * (ci/arm64_check.sh gives the flags; on other architectures those two files are empty).
 */
#include "tile.h"
#include <stdio.h>

static unsigned long long lcg_state = 12345;
static double unif(void)              /* [0, 1), 53 bits */
{
    lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(lcg_state >> 11) * (1.0 / 9007199254740992.0);
}
static int pick(int n) { return (int)(unif() * n); }

#define NR 700                      /* reference rows: more than one tile */
#define NQ 9
#define MC 5
#define MO 3
#define MT 2
#define ME 2

int main(int argc, char **argv)
{
    int isa = argc > 1 ? atoi(argv[1]) : 0;
    if (hd_isa_set(isa) != 0) {
        fprintf(stderr, "variant %d not available\n", isa);
        return 2;
    }
    static const int tV[MT] = {4, 6};
    static const hd_intp eoff[ME + 1] = {0, 3, 7};
    static const unsigned char eq[ME] = {1, 2};
    const hd_intp D = eoff[ME];
    double *rc = malloc(sizeof(double) * MC * NR), *rcp = malloc(sizeof(double) * MC * NR);
    int *ro = malloc(sizeof(int) * MO * NR), *rt = malloc(sizeof(int) * MT * NR);
    double *re = malloc(sizeof(double) * D * NR);
    double qc[NQ][MC], qcp[NQ][MC], qe[NQ][7];
    int qo[NQ][MO], qt[NQ][MT];
    double c_inv[MC], c_tw[MC], c_both[MC], c_rw[MC], o_w[MO], o_miss[MO], o_rw[MO];
    double t_miss[MT], t_rw[MT], e_miss[ME], e_rw[ME];
    unsigned char c_ign[MC], o_ign[MO], t_ign[MT], e_ign[ME];
    hd_intp t_off[MT];
    double tab[(4 + 1) * (4 + 1) + (6 + 1) * (6 + 1)];
    hd_intp a, j, i, k;
    double w_all = 0.0, w_max = 0.0;

    for (a = 0; a < MC; a++) {
        c_inv[a] = 0.5 + unif();
        c_tw[a] = 0.25 + unif();
        c_both[a] = c_tw[a];
        c_rw[a] = c_tw[a];
        c_ign[a] = (unsigned char)(a % 2);
        for (j = 0; j < NR; j++) {
            double v = unif() < 0.1 ? NAN : (double)pick(7) * 0.37 + unif() * (a == 0);
            rc[a * NR + j] = v;
            rcp[a * NR + j] = c_tw[a] * unif();
        }
    }
    for (a = 0; a < MO; a++) {
        o_w[a] = 0.5 + unif();
        o_miss[a] = o_w[a];
        o_rw[a] = o_w[a];
        o_ign[a] = (unsigned char)(a % 2);
        for (j = 0; j < NR; j++)
            ro[a * NR + j] = unif() < 0.1 ? -1 : pick(50 + 40 * (int)a);
    }
    t_off[0] = 0;
    t_off[1] = (4 + 1) * (4 + 1);
    for (k = 0; k < (hd_intp)(sizeof tab / sizeof tab[0]); k++)
        tab[k] = unif();
    for (a = 0; a < MT; a++) {
        t_miss[a] = 1.0;
        t_rw[a] = 0.75;
        t_ign[a] = (unsigned char)(a % 2);
        for (j = 0; j < NR; j++)
            rt[a * NR + j] = unif() < 0.1 ? -1 : pick(tV[a] + 1);    /* tV: unseen */
    }
    for (a = 0; a < ME; a++) {
        e_miss[a] = 1.0;
        e_rw[a] = 0.5 + unif();
        e_ign[a] = (unsigned char)(a % 2);
        for (j = 0; j < NR; j++) {
            int miss = unif() < 0.1;
            for (k = eoff[a]; k < eoff[a + 1]; k++)
                re[k * NR + j] = miss ? NAN : unif();
        }
    }
    for (i = 0; i < NQ; i++) {
        for (a = 0; a < MC; a++) {
            qc[i][a] = (i + a) % 5 == 0 ? NAN : (double)pick(7) * 0.37 + unif() * (a == 0);
            qcp[i][a] = c_tw[a] * unif();
        }
        for (a = 0; a < MO; a++)
            qo[i][a] = (i + a) % 6 == 0 ? -1 : pick(50 + 40 * (int)a);
        for (a = 0; a < MT; a++)
            qt[i][a] = (i + a) % 7 == 0 ? -1 : pick(tV[a] + 1);
        for (a = 0; a < ME; a++) {
            int miss = (i + a) % 8 == 0;
            for (k = eoff[a]; k < eoff[a + 1]; k++)
                qe[i][k] = miss ? NAN : unif();
        }
    }
    for (a = 0; a < MC; a++) { w_all += c_rw[a]; if (c_rw[a] > w_max) w_max = c_rw[a]; }
    for (a = 0; a < MO; a++) { w_all += o_rw[a]; if (o_rw[a] > w_max) w_max = o_rw[a]; }
    for (a = 0; a < MT; a++) { w_all += t_rw[a]; if (t_rw[a] > w_max) w_max = t_rw[a]; }
    for (a = 0; a < ME; a++) { w_all += e_rw[a]; if (e_rw[a] > w_max) w_max = e_rw[a]; }

    hd_tr R;
    R.ld = NR; R.c = rc; R.cpen = rcp; R.o = ro; R.t = rt; R.e = re;
    static const int modes[7] = {0, 1, 2, 3, 3, 5, 6};
    static const double ps[7] = {INFINITY, 1.0, 2.0, 0.5, 3.0, 3.0, 4.0};
    double s[HD_TB];
    int ign, m;
    for (ign = 0; ign < 2; ign++) {
        for (m = 0; m < 7; m++) {
            hd_tplan P;
            memset(&P, 0, sizeof P);
            P.mc = MC; P.mo = MO; P.mt = MT; P.me = ME;
            P.pmode = modes[m]; P.p = ps[m]; P.ign = ign;
            P.ign_unit = 0; P.ign_w = 0.0; P.ign_all = 0.0;   /* unequal weights */
            P.w_all = w_all; P.w_max = w_max;
            P.c_inv = c_inv; P.c_tw = c_tw; P.c_both = c_both; P.c_rw = c_rw; P.c_ign = c_ign;
            P.o_w = o_w; P.o_miss = o_miss; P.o_rw = o_rw; P.o_ign = o_ign;
            P.t_tab = tab; P.t_off = t_off; P.t_V = tV; P.t_miss = t_miss; P.t_rw = t_rw;
            P.t_ign = t_ign;
            P.e_off = eoff; P.e_q = eq; P.e_miss = e_miss; P.e_rw = e_rw; P.e_ign = e_ign;
            for (i = 0; i < NQ; i++) {
                hd_tq Q;
                Q.c = qc[i]; Q.cpen = qcp[i]; Q.o = qo[i]; Q.t = qt[i]; Q.e = qe[i];
                for (j = 0; j < NR; j += HD_TB) {
                    hd_intp nb = NR - j < HD_TB ? NR - j : HD_TB;
                    if (hd_tile(&P, &Q, &R, j, nb, INFINITY, s))
                        printf("abandoned\n");
                    for (k = 0; k < nb; k++)
                        printf("%d %d %d %d %a\n", ign, m, (int)i, (int)(j + k), s[k]);
                }
            }
        }
    }
    return 0;
}
