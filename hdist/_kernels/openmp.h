/* OpenMP's presence, default thread count and thread number (1 and 0 without it). */
#ifndef HDIST_OPENMP_H
#define HDIST_OPENMP_H
#if HDIST_HAVE_OPENMP
#include <omp.h>
static int hdist_openmp_enabled(void) { return 1; }
static int hdist_max_threads(void) { return omp_get_max_threads(); }
static int hdist_thread_id(void) { return omp_get_thread_num(); }
#else
static int hdist_openmp_enabled(void) { return 0; }
static int hdist_max_threads(void) { return 1; }
static int hdist_thread_id(void) { return 0; }
#endif
#endif
