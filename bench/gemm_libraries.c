/* GPT-2 small's GEMM shapes (batch 4 x 128) on one core through one library,
 * GFLOP/s per shape from the thread's CPU time (steady on a shared machine).
 * Build one binary per library and run each pinned to one core:
 *
 *   gcc -O2 bench/gemm_libraries.c -o /tmp/g_openblas -lopenblas
 *   gcc -O2 bench/gemm_libraries.c -o /tmp/g_blis /usr/lib/x86_64-linux-gnu/libblis.so
 *   gcc -O2 -DUSE_DNNL bench/gemm_libraries.c -o /tmp/g_dnnl -ldnnl
 *   for l in openblas blis dnnl; do OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
 *     BLIS_NUM_THREADS=1 BLIS_ARCH_TYPE=0 taskset -c 1 /tmp/g_$l; done
 *
 * (BLIS_ARCH_TYPE=0 picks BLIS 0.9's skx kernels, AVX-512; it picks zen3 on
 * Zen 4 by itself.) docs/benchmarks.md records the figures. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef USE_DNNL
#include <dnnl.h>
#define SG(ta,tb,m,n,k,a,lda,b,ldb,c,ldc) dnnl_sgemm(ta?'T':'N',tb?'T':'N',m,n,k,1.f,a,lda,b,ldb,0.f,c,ldc)
#else
void cblas_sgemm(int,int,int,int,int,int,float,const float*,int,const float*,int,float,float*,int);
#define SG(ta,tb,m,n,k,a,lda,b,ldb,c,ldc) cblas_sgemm(101,ta?112:111,tb?112:111,m,n,k,1.f,a,lda,b,ldb,0.f,c,ldc)
#endif
static double now(){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(){
  int shapes[][5]={{512,2304,768,0,0},{512,768,3072,0,0},{512,3072,768,0,0},{512,50257,768,0,1},{768,50257,512,1,0},{512,768,50257,0,0},{768,3072,512,1,0}};
  float *a=malloc(sizeof(float)*512*50257),*b=malloc(sizeof(float)*768*50257),*c=malloc(sizeof(float)*768*50257);
  for(long i=0;i<512L*50257;i++)a[i]=(i%7)*0.1f; for(long i=0;i<768L*50257;i++){b[i]=(i%5)*0.1f;c[i]=0;}
  double tf=0,tt=0;
  for(int s=0;s<7;s++){int m=shapes[s][0],n=shapes[s][1],k=shapes[s][2],ta=shapes[s][3],tb=shapes[s][4];
    int lda=ta?m:k, ldb=tb?k:n;
    SG(ta,tb,m,n,k,a,lda,b,ldb,c,n);
    double best=1e9; for(int r=0;r<5;r++){double t0=now();SG(ta,tb,m,n,k,a,lda,b,ldb,c,n);double t=now()-t0;if(t<best)best=t;}
    double f=2.0*m*n*k; tf+=f; tt+=best;
    printf("%5d %6d %6d %d%d %7.1f GFLOP/s\n",m,n,k,ta,tb,f/best*1e-9);}
  printf("total %.1f GFLOP/s\n",tf/tt*1e-9);}
