//go:build cgo

package layers

/*
#cgo CFLAGS: -O3 -ffast-math
#cgo LDFLAGS: -lm
#include <math.h>
#include <string.h>

// The batched spline kernel of spline_vec.go in C: one call evaluates a
// chunk of m elements into the rows of buf (the layout rqRow* of
// spline_vec.go, each row m long).
//
// The elementwise exp, log1p and log are built as vmath_cgo.go builds exp
// and tanh: with -ffast-math GCC vectorises fixed-size block loops with
// glibc's libmvec (exp and log since glibc 2.22, log1p since 2.35; older
// headers leave log1p a scalar call), target_clones picks the AVX-512,
// AVX2 or SSE2 variant at load time, and every element goes through the
// same block, so that f(x[i]) depends on x[i] alone, not on the buffers'
// addresses or the element's position.
#define FLOWEBM_SPL_BLOCK 64
#define FLOWEBM_SPL_TAIL 16
#define FLOWEBM_SPL_MAP(NAME, EXPR, PAD) \
static inline void NAME##_full(const double *restrict bx, double *restrict by) { \
	_Pragma("GCC unroll 1") \
	for (int j = 0; j < FLOWEBM_SPL_BLOCK; j++) by[j] = EXPR(bx[j]); \
} \
static inline void NAME##_tail(const double *restrict bx, double *restrict by) { \
	_Pragma("GCC unroll 1") \
	for (int j = 0; j < FLOWEBM_SPL_TAIL; j++) by[j] = EXPR(bx[j]); \
} \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void NAME(const double *x, double *y, long n) { \
	double bx[FLOWEBM_SPL_BLOCK], by[FLOWEBM_SPL_BLOCK]; \
	long i = 0; \
	for (; i + FLOWEBM_SPL_BLOCK <= n; i += FLOWEBM_SPL_BLOCK) { \
		memcpy(bx, x + i, sizeof bx); \
		NAME##_full(bx, by); \
		memcpy(y + i, by, sizeof by); \
	} \
	for (; i < n; i += FLOWEBM_SPL_TAIL) { \
		long m = n - i < FLOWEBM_SPL_TAIL ? n - i : FLOWEBM_SPL_TAIL; \
		for (int j = 0; j < FLOWEBM_SPL_TAIL; j++) bx[j] = j < m ? x[i + j] : PAD; \
		NAME##_tail(bx, by); \
		memcpy(y + i, by, m * sizeof(double)); \
	} \
}
FLOWEBM_SPL_MAP(flowebm_spl_exp, exp, 0)
FLOWEBM_SPL_MAP(flowebm_spl_log, log, 1)
FLOWEBM_SPL_MAP(flowebm_spl_log1p, log1p, 0)

// The arithmetic is compiled without the package's -ffast-math and
// without contraction into fused multiply-adds, as coupling_op_cgo.go's
// (and without errno, which lets sqrt vectorise):
// every element goes through the IEEE operations of the Go code
// (rqLocal.point, rqCumKnots, …) in the same order, so a result is that of
// the scalar evaluation with the same exp, log1p and log, to the last bit.
#pragma GCC push_options
#pragma GCC optimize ("O3", "no-fast-math", "fp-contract=off", "no-math-errno", "no-trapping-math")

// The rows of buf (spline_vec.go's rqRow… constants), after the 2K rows of
// exponentials and the 2(K+1) rows of knots.
enum { X0, W, Y0, H, D0, D1, U0, U1, SP0, SP1, SPL0, SPL1, XI, SL, A, T, MM, Q, N, LG0, LG1, OUT, BIN, GY, GL, DX, GP0, GP1, GP2, GP3, GP4, GP5, PB, PK, TMP, NROWS };

// The shift of a chunk's raw widths and heights by their maxima, for θ of
// type T: row j < K of buf the widths, rows K…2K−1 the heights; 0 in the
// tails. The loops run over the chunk, so that the maxima vectorise (NaN
// wins: the maximum of a softmax with a NaN is NaN, as in rqSoftmax).
#define FLOWEBM_RQS_SHIFT(NAME, T) \
static void NAME(long k, long p, double bound, const T *th, const double *v, long m, double *buf, double *mx) { \
	for (long i = 0; i < m; i++) { \
		const T *u = th + i * p; \
		for (long j = 0; j < 2 * k; j++) buf[j * m + i] = u[j]; \
	} \
	flowebm_rqs_shift_rows(k, bound, v, m, buf, mx); \
	flowebm_rqs_shift_rows(k, bound, v, m, buf + k * m, mx); \
}

__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_shift_rows(long k, double bound, const double *v, long m, double *e, double *mx) {
	for (long i = 0; i < m; i++) mx[i] = e[i];
	for (long j = 1; j < k; j++) {
		const double *ej = e + j * m;
		for (long i = 0; i < m; i++) {
			double x = ej[i];
			mx[i] = x > mx[i] || x != x ? x : mx[i];
		}
	}
	for (long j = 0; j < k; j++) {
		double *ej = e + j * m;
		for (long i = 0; i < m; i++) {
			double x = ej[i] - mx[i];
			ej[i] = v[i] >= -bound && v[i] <= bound ? x : 0;
		}
	}
}
FLOWEBM_RQS_SHIFT(flowebm_rqs_shift64, double)
FLOWEBM_RQS_SHIFT(flowebm_rqs_shift32, float)

// rqs_knots normalises the K rows e by their sum (into tmp), as
// rqSoftmax, and writes the K+1 rows of knots (rqCumKnots).
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_knots(long k, long m, double minb, double bound, double *e, double *knots, double *tmp) {
	for (long i = 0; i < m; i++) tmp[i] = 0;
	for (long j = 0; j < k; j++) {
		const double *ej = e + j * m;
		for (long i = 0; i < m; i++) tmp[i] += ej[i];
	}
	for (long j = 0; j < k; j++) {
		double *ej = e + j * m;
		for (long i = 0; i < m; i++) ej[i] /= tmp[i];
	}
	double scale = 1 - minb * (double)k;
	for (long i = 0; i < m; i++) {
		tmp[i] = 0;
		knots[i] = -bound;
		knots[k * m + i] = bound;
	}
	for (long j = 0; j < k - 1; j++) {
		const double *ej = e + j * m;
		double *kj = knots + (j + 1) * m;
		for (long i = 0; i < m; i++) {
			tmp[i] += minb + scale * ej[i];
			kj[i] = 2 * bound * tmp[i] - bound;
		}
	}
}

// rqs_count counts the interior knots of grid at or below v, as a float64
// into the row BIN, −1 in the tails: for knots that do not decrease (the
// sums of positive bin sizes, or NaN from NaN parameters) rqSearch's bin,
// without its unpredictable branches.
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_count(long k, long m, double bound, const double *restrict grid, const double *restrict v, double *restrict binf) {
	for (long i = 0; i < m; i++) binf[i] = 0;
	for (long j = 1; j < k; j++) {
		const double *restrict gj = grid + j * m;
		for (long i = 0; i < m; i++) binf[i] += gj[i] <= v[i] ? 1 : 0;
	}
	for (long i = 0; i < m; i++) binf[i] = (v[i] >= -bound) & (v[i] <= bound) ? binf[i] : -1;
}

// rqs_bins gathers each element's bin (rqLocal) and the raw derivatives
// at its ends (the bin's first in the tails).
#define FLOWEBM_RQS_BINS(NAME, T) \
static void NAME(long k, long p, const T *th, long m, const double *kx, const double *ky, long long *bin, double *buf) { \
	double *x0 = buf + X0 * m, *w = buf + W * m, *y0 = buf + Y0 * m, *h = buf + H * m; \
	double *u0 = buf + U0 * m, *u1 = buf + U1 * m, *sp0 = buf + SP0 * m, *sp1 = buf + SP1 * m; \
	const double *binf = buf + BIN * m; \
	for (long i = 0; i < m; i++) { \
		long b = (long)binf[i]; \
		bin[i] = b; \
		b = b < 0 ? 0 : b; \
		x0[i] = kx[b * m + i]; \
		w[i] = kx[(b + 1) * m + i] - kx[b * m + i]; \
		y0[i] = ky[b * m + i]; \
		h[i] = ky[(b + 1) * m + i] - ky[b * m + i]; \
		const T *ud = th + i * p + 2 * k; \
		double l = ud[b >= 1 ? b - 1 : 0], r = ud[b + 1 <= k - 1 ? b : 0]; \
		u0[i] = b >= 1 ? l : 0; \
		u1[i] = b + 1 <= k - 1 ? r : 0; \
		sp0[i] = -fabs(u0[i]); \
		sp1[i] = -fabs(u1[i]); \
	} \
}
FLOWEBM_RQS_BINS(flowebm_rqs_bins64, double)
FLOWEBM_RQS_BINS(flowebm_rqs_bins32, float)

// rqs_point computes the end derivatives δ_k = m_δ + (max(u, 0) +
// log1p(exp(−|u|))) (1 at the boundary knots) and rqLocal.point, the
// output (rqLocal.out) and the arguments of the log-derivative's two
// logarithms (1 in the tails). The selections are written without
// short-circuits so that the loop has no control flow and vectorises.
static inline double max0(double v) { return (v > 0) | (v != v) ? v : 0; }

#define RQ_IN const double *restrict
#define RQ_OUT double *restrict
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_point(long k, long m, double md, int inverse, RQ_IN v,
		RQ_IN bin, RQ_IN x0, RQ_IN w, RQ_IN y0, RQ_IN h, RQ_IN u0, RQ_IN u1, RQ_IN spl0, RQ_IN spl1,
		RQ_OUT d0, RQ_OUT d1, RQ_OUT xi_, RQ_OUT sl_, RQ_OUT a_, RQ_OUT t_, RQ_OUT m_, RQ_OUT q_, RQ_OUT n_,
		RQ_OUT lg0, RQ_OUT lg1, RQ_OUT out) {
	const double last = k - 1;
	for (long i = 0; i < m; i++) {
		// Every load unconditional, so that the selections vectorise.
		double b = bin[i], uu0 = u0[i], uu1 = u1[i], s0 = spl0[i], s1 = spl1[i], vi = v[i], ww = w[i], xx0 = x0[i];
		double dd0 = (b >= 1) ? md + (max0(uu0) + s0) : 1;
		double dd1 = (b >= 0) & (b + 1 <= last) ? md + (max0(uu1) + s1) : 1;
		d0[i] = dd0;
		d1[i] = dd1;
		double hh = h[i], sl = hh / ww;
		double a = dd0 + dd1 - 2 * sl;
		double xi;
		if (inverse) {
			double dy = vi - y0[i];
			double qa = dy * a + hh * (sl - dd0);
			double qb = hh * dd0 - dy * a;
			double qc = -sl * dy;
			double disc = max0(qb * qb - 4 * qa * qc);
			xi = 2 * qc / (-qb - sqrt(disc));
		} else {
			xi = (vi - xx0) / ww;
		}
		double t = xi * (1 - xi);
		double mm = sl + a * t;
		double q = dd1 * xi * xi + 2 * sl * t + dd0 * (1 - xi) * (1 - xi);
		double n = sl * xi * xi + dd0 * t;
		xi_[i] = xi;
		sl_[i] = sl;
		a_[i] = a;
		t_[i] = t;
		m_[i] = mm;
		q_[i] = q;
		n_[i] = n;
		double o = inverse ? xi * ww + xx0 : y0[i] + hh * n / mm;
		out[i] = b < 0 ? vi : o;
		lg0[i] = b < 0 ? 1 : sl * sl * q;
		lg1[i] = b < 0 ? 1 : mm;
	}
}

#define RQ_POINT_ARGS(inv, buf) k, m, md, inv, v, buf + BIN * m, buf + X0 * m, buf + W * m, buf + Y0 * m, buf + H * m, \
	buf + U0 * m, buf + U1 * m, buf + SPL0 * m, buf + SPL1 * m, buf + D0 * m, buf + D1 * m, buf + XI * m, buf + SL * m, \
	buf + A * m, buf + T * m, buf + MM * m, buf + Q * m, buf + N * m, buf + LG0 * m, buf + LG1 * m, buf + OUT * m

// rqs_ell is ℓ = log(s²q) − 2 log(m) into the row LG0.
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_ell(long m, double *buf) {
	double *lg0 = buf + LG0 * m, *lg1 = buf + LG1 * m;
	for (long i = 0; i < m; i++) lg0[i] = lg0[i] - 2 * lg1[i];
}

// The gradient operations' arithmetic (rqLocal.grads and
// RQSpline.rawGrad, in their operations' order). mode is rqModeValue (0),
// rqModeLogDet (1) or rqModeJoint (2): which of the upstream gradients gy
// (of the value) and gl (of the log-derivative) weigh the derivatives, as
// rqsGradRun weighs them.
#define RQ_GRAD_IN(buf) buf + BIN * m, buf + W * m, buf + H * m, buf + D0 * m, buf + D1 * m, buf + XI * m, buf + SL * m, \
	buf + A * m, buf + T * m, buf + MM * m, buf + Q * m, buf + N * m, buf + GY * m, buf + GL * m

// rqs_dx is the gradient with respect to the input into the row DX: gy·∂out
// + gl·∂ℓ (with ∂out = 1, ∂ℓ = 0 in the tails), one function per direction
// and mode (GCC vectorises no selection on a loop-invariant flag).
#define RQ_WEIGH(MODE, dout, dld) ((MODE) == 2 ? gy * (dout) + gl * (dld) : (MODE) == 1 ? (dld) * gl : (dout) * gy)
#define FLOWEBM_RQS_DX(NAME, INV, MODE) \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void NAME(long m, RQ_IN bin, RQ_IN w, RQ_IN h, RQ_IN d0, RQ_IN d1, RQ_IN xi_, \
		RQ_IN sl_, RQ_IN a_, RQ_IN t_, RQ_IN m_, RQ_IN q_, RQ_IN n_, RQ_IN gy_, RQ_IN gl_, RQ_OUT dx) { \
	for (long i = 0; i < m; i++) { \
		double b = bin[i], ww = w[i], dd0 = d0[i], dd1 = d1[i], xi = xi_[i], sl = sl_[i], a = a_[i]; \
		double mm = m_[i], q = q_[i], gy = gy_[i], gl = gl_[i]; \
		double fx = sl * sl * q / (mm * mm); \
		double mxi = a * (1 - 2 * xi); \
		double qxi = 2 * dd1 * xi + 2 * sl * (1 - 2 * xi) - 2 * dd0 * (1 - xi); \
		double lxi = qxi / q - 2 * mxi / mm; \
		double lx = lxi / ww; \
		double dout = (INV) ? 1 / fx : fx; \
		double dld = (INV) ? -lx / fx : lx; \
		dout = b < 0 ? 1 : dout; \
		dld = b < 0 ? 0 : dld; \
		dx[i] = RQ_WEIGH(MODE, dout, dld); \
	} \
}
FLOWEBM_RQS_DX(flowebm_rqs_dx_f0, 0, 0)
FLOWEBM_RQS_DX(flowebm_rqs_dx_f1, 0, 1)
FLOWEBM_RQS_DX(flowebm_rqs_dx_f2, 0, 2)
FLOWEBM_RQS_DX(flowebm_rqs_dx_i0, 1, 0)
FLOWEBM_RQS_DX(flowebm_rqs_dx_i1, 1, 1)
FLOWEBM_RQS_DX(flowebm_rqs_dx_i2, 1, 2)

// rqs_gp is the gradient with respect to the bin's local parameters (X_k,
// W, Y_k, H, δ_k, δ_{k+1}) into the rows GP0…GP5.
#define FLOWEBM_RQS_GP(NAME, INV, MODE) \
__attribute__((target_clones("avx512f","avx2","default"))) \
static void NAME(long m, RQ_IN bin, RQ_IN w, RQ_IN h, RQ_IN d0, RQ_IN d1, RQ_IN xi_, \
		RQ_IN sl_, RQ_IN a_, RQ_IN t_, RQ_IN m_, RQ_IN q_, RQ_IN n_, RQ_IN gy_, RQ_IN gl_, \
		RQ_OUT g0, RQ_OUT g1, RQ_OUT g2, RQ_OUT g3, RQ_OUT g4, RQ_OUT g5) { \
	for (long i = 0; i < m; i++) { \
		double ww = w[i], hh = h[i], dd0 = d0[i], dd1 = d1[i], xi = xi_[i], sl = sl_[i], a = a_[i], t = t_[i]; \
		double mm = m_[i], q = q_[i], n = n_[i], gy = gy_[i], gl = gl_[i]; \
		double fx = sl * sl * q / (mm * mm); \
		double r = n / mm; \
		double rxi = fx / sl; \
		double ms = 1 - 2 * t; \
		double rs = (xi * xi - r * ms) / mm; \
		double rd0 = (t - r * t) / mm; \
		double rd1 = -r * t / mm; \
		double fp0 = -fx, fp1 = -hh * (rxi * xi + rs * sl) / ww, fp2 = 1, fp3 = r + sl * rs, fp4 = hh * rd0, fp5 = hh * rd1; \
		double mxi = a * (1 - 2 * xi); \
		double qxi = 2 * dd1 * xi + 2 * sl * (1 - 2 * xi) - 2 * dd0 * (1 - xi); \
		double lxi = qxi / q - 2 * mxi / mm; \
		double ls = 2 / sl + 2 * t / q - 2 * ms / mm; \
		double lx = lxi / ww; \
		double lp0 = -lx, lp1 = -(lxi * xi + ls * sl) / ww, lp2 = 0, lp3 = ls / ww; \
		double lp4 = (1 - xi) * (1 - xi) / q - 2 * t / mm, lp5 = xi * xi / q - 2 * t / mm; \
		g0[i] = RQ_GP(INV, MODE, fp0, lp0); \
		g1[i] = RQ_GP(INV, MODE, fp1, lp1); \
		g2[i] = RQ_GP(INV, MODE, fp2, lp2); \
		g3[i] = RQ_GP(INV, MODE, fp3, lp3); \
		g4[i] = RQ_GP(INV, MODE, fp4, lp4); \
		g5[i] = RQ_GP(INV, MODE, fp5, lp5); \
	} \
}
// The weighed derivative of the output (inverse: −F_p/F_x) and of the
// log-derivative (inverse: −ℓ_p + ℓ_x F_p/F_x).
#define RQ_GP(INV, MODE, fp, lp) RQ_WEIGH(MODE, (INV) ? -(fp) / fx : (fp), (INV) ? -(lp) + lx * (fp) / fx : (lp))
FLOWEBM_RQS_GP(flowebm_rqs_gp_f0, 0, 0)
FLOWEBM_RQS_GP(flowebm_rqs_gp_f1, 0, 1)
FLOWEBM_RQS_GP(flowebm_rqs_gp_f2, 0, 2)
FLOWEBM_RQS_GP(flowebm_rqs_gp_i0, 1, 0)
FLOWEBM_RQS_GP(flowebm_rqs_gp_i1, 1, 1)
FLOWEBM_RQS_GP(flowebm_rqs_gp_i2, 1, 2)

// rqs_softmax_back overwrites the K rows p of a softmax with ∂/∂u for
// ∂/∂p_j = c·ga for j < bin, c·gb for j = bin, 0 above (rqSoftmaxBack).
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_softmax_back(long k, long m, double c, RQ_IN bin, RQ_IN ga, RQ_IN gb, double *restrict p,
		double *restrict below, double *restrict pk) {
	for (long i = 0; i < m; i++) {
		below[i] = 0;
		pk[i] = 0;
	}
	for (long j = 0; j < k; j++) {
		const double *restrict pj = p + j * m;
		double jj = j;
		for (long i = 0; i < m; i++) {
			double x = pj[i], b = bin[i];
			below[i] = jj < b ? below[i] + x : below[i];
			pk[i] = jj == b ? x : pk[i];
		}
	}
	for (long j = 0; j < k; j++) {
		double *restrict pj = p + j * m;
		double jj = j;
		for (long i = 0; i < m; i++) {
			double a = c * ga[i], bb = c * gb[i], b = bin[i];
			double dot = a * below[i] + bb * pk[i];
			double g = jj < b ? a : jj == b ? bb : 0;
			pj[i] = pj[i] * (g - dot);
		}
	}
}

// rqs_sig writes the derivatives' part of the raw gradient at the bin's
// ends, 0 + gp[4]·σ(u_d) and 0 + gp[5]·σ(u_d) (rawGrad), over GP4 and GP5.
__attribute__((target_clones("avx512f","avx2","default")))
static void flowebm_rqs_sig(long m, RQ_IN u0, RQ_IN u1, RQ_IN e0, RQ_IN e1, double *restrict g4, double *restrict g5) {
	for (long i = 0; i < m; i++) {
		double a = e0[i], b = e1[i];
		double s0 = u0[i] >= 0 ? 1 / (1 + a) : a / (1 + a);
		double s1 = u1[i] >= 0 ? 1 / (1 + b) : b / (1 + b);
		g4[i] = 0 + g4[i] * s0;
		g5[i] = 0 + g5[i] * s1;
	}
}

// rqs_rawgrad writes the raw gradients (m, 3K−1) of type T of a chunk:
// the softmax gradients from the rows e (widths, then heights; after
// rqs_softmax_back), the derivatives' from GP4 and GP5 (after rqs_sig); 0
// in the tails.
#define FLOWEBM_RQS_RAWGRAD(NAME, T) \
static void NAME(long k, long m, const double *e, const double *buf, T *out) { \
	long p = 3 * k - 1; \
	const double *bin = buf + BIN * m, *g4 = buf + GP4 * m, *g5 = buf + GP5 * m; \
	for (long i = 0; i < m; i++) { \
		T *o = out + i * p; \
		long b = (long)bin[i]; \
		for (long j = 0; j < 2 * k; j++) o[j] = (T)(b < 0 ? 0 : e[j * m + i]); \
		for (long j = 0; j < k - 1; j++) o[2 * k + j] = (T)(j == b - 1 ? g4[i] : j == b ? g5[i] : 0); \
	} \
}
FLOWEBM_RQS_RAWGRAD(flowebm_rqs_rawgrad64, double)
FLOWEBM_RQS_RAWGRAD(flowebm_rqs_rawgrad32, float)

// rqs_grads evaluates a chunk's gradient (spline_vec.go's rqGradKernel)
// after rqs_chunk: with wrt 0 the row DX, with wrt 1 the raw gradients
// into out.
#define FLOWEBM_RQS_GRADS(NAME, T, RAWGRAD) \
static void NAME(long k, double bound, double mw, double mh, int inverse, int wrt, int mode, long m, double *buf, T *out) { \
	double *e = buf, *rows = buf + (4 * k + 2) * m; \
	if (wrt == 0) { \
		void (*dx)(long, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_OUT) = \
			inverse ? (mode == 2 ? flowebm_rqs_dx_i2 : mode == 1 ? flowebm_rqs_dx_i1 : flowebm_rqs_dx_i0) \
				: (mode == 2 ? flowebm_rqs_dx_f2 : mode == 1 ? flowebm_rqs_dx_f1 : flowebm_rqs_dx_f0); \
		dx(m, RQ_GRAD_IN(rows), rows + DX * m); \
		return; \
	} \
	void (*gp)(long, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, RQ_IN, \
			RQ_OUT, RQ_OUT, RQ_OUT, RQ_OUT, RQ_OUT, RQ_OUT) = \
		inverse ? (mode == 2 ? flowebm_rqs_gp_i2 : mode == 1 ? flowebm_rqs_gp_i1 : flowebm_rqs_gp_i0) \
			: (mode == 2 ? flowebm_rqs_gp_f2 : mode == 1 ? flowebm_rqs_gp_f1 : flowebm_rqs_gp_f0); \
	gp(m, RQ_GRAD_IN(rows), rows + GP0 * m, rows + GP1 * m, rows + GP2 * m, rows + GP3 * m, rows + GP4 * m, rows + GP5 * m); \
	double cw = 2 * bound * (1 - mw * (double)k), ch = 2 * bound * (1 - mh * (double)k); \
	flowebm_rqs_softmax_back(k, m, cw, rows + BIN * m, rows + GP0 * m, rows + GP1 * m, e, rows + PB * m, rows + PK * m); \
	flowebm_rqs_softmax_back(k, m, ch, rows + BIN * m, rows + GP2 * m, rows + GP3 * m, e + k * m, rows + PB * m, rows + PK * m); \
	flowebm_rqs_sig(m, rows + U0 * m, rows + U1 * m, rows + SP0 * m, rows + SP1 * m, rows + GP4 * m, rows + GP5 * m); \
	RAWGRAD(k, m, e, rows, out); \
}
FLOWEBM_RQS_GRADS(flowebm_rqs_grads64, double, flowebm_rqs_rawgrad64)
FLOWEBM_RQS_GRADS(flowebm_rqs_grads32, float, flowebm_rqs_rawgrad32)

// rqs_chunk evaluates a chunk (spline_vec.go's rqKernel).
#define FLOWEBM_RQS_CHUNK(NAME, T, SHIFT, BINS) \
static void NAME(long k, double bound, double mw, double mh, double md, int inverse, int logs, const T *th, const double *v, long m, long long *bin, double *buf) { \
	long p = 3 * k - 1; \
	double *e = buf, *kx = buf + 2 * k * m, *ky = kx + (k + 1) * m, *rows = ky + (k + 1) * m; \
	SHIFT(k, p, bound, th, v, m, e, rows + TMP * m); \
	flowebm_spl_exp(e, e, 2 * k * m); \
	flowebm_rqs_knots(k, m, mw, bound, e, kx, rows + TMP * m); \
	flowebm_rqs_knots(k, m, mh, bound, e + k * m, ky, rows + TMP * m); \
	flowebm_rqs_count(k, m, bound, inverse ? ky : kx, v, rows + BIN * m); \
	BINS(k, p, th, m, kx, ky, bin, rows); \
	flowebm_spl_exp(rows + SP0 * m, rows + SP0 * m, 2 * m); \
	flowebm_spl_log1p(rows + SP0 * m, rows + SPL0 * m, 2 * m); \
	flowebm_rqs_point(RQ_POINT_ARGS(inverse, rows)); \
	if (logs) { \
		flowebm_spl_log(rows + LG0 * m, rows + LG0 * m, 2 * m); \
		flowebm_rqs_ell(m, rows); \
	} \
}
FLOWEBM_RQS_CHUNK(flowebm_rqs_chunk64, double, flowebm_rqs_shift64, flowebm_rqs_bins64)
FLOWEBM_RQS_CHUNK(flowebm_rqs_chunk32, float, flowebm_rqs_shift32, flowebm_rqs_bins32)

#pragma GCC pop_options
*/
import "C"

import "unsafe"

// The C kernel's rows are spline_vec.go's.
var (
	_ = [1]struct{}{}[C.NROWS-rqNamedRows]
	_ = [1]struct{}{}[C.BIN-rqRowBin]
	_ = [1]struct{}{}[C.GP0-rqRowGP0]
	_ = [1]struct{}{}[C.TMP-rqRowTmp]
)

// rqKernel evaluates the chunk's m elements (inputs sc.v, raw parameters
// th, (m, 3K−1)) into sc.buf and sc.bin (spline_vec.go); with logs also
// the log-derivatives.
func rqKernel[F float32 | float64](s RQSpline, inverse, logs bool, th []F, sc *rqScratch, m int) {
	if m == 0 {
		return
	}
	_ = th[m*s.ParamsPerCoord()-1]
	k, b := C.long(s.Bins), C.double(s.TailBound)
	mw, mh, md := C.double(s.MinBinWidth), C.double(s.MinBinHeight), C.double(s.MinDerivative)
	v, bin, buf := (*C.double)(&sc.v[0]), (*C.longlong)(unsafe.Pointer(&sc.bin[0])), (*C.double)(&sc.buf[0])
	switch t := any(th).(type) {
	case []float64:
		C.flowebm_rqs_chunk64(k, b, mw, mh, md, rqCBool(inverse), rqCBool(logs), (*C.double)(&t[0]), v, C.long(m), bin, buf)
	case []float32:
		C.flowebm_rqs_chunk32(k, b, mw, mh, md, rqCBool(inverse), rqCBool(logs), (*C.float)(&t[0]), v, C.long(m), bin, buf)
	}
}

// rqGradKernel evaluates, after rqKernel, the chunk's gradient: with wrt
// 0 the gradient with respect to the inputs into the row rqRowDX, with wrt
// 1 the raw gradients into out (m, 3K−1); the upstream gradients are in
// the rows rqRowGY and rqRowGL, weighted as mode says.
func rqGradKernel[F float32 | float64](s RQSpline, inverse bool, wrt, mode int, sc *rqScratch, m int, out []F) {
	if m == 0 {
		return
	}
	k, b := C.long(s.Bins), C.double(s.TailBound)
	mw, mh := C.double(s.MinBinWidth), C.double(s.MinBinHeight)
	buf := (*C.double)(&sc.buf[0])
	if wrt == 0 {
		C.flowebm_rqs_grads64(k, b, mw, mh, rqCBool(inverse), 0, C.int(mode), C.long(m), buf, nil)
		return
	}
	_ = out[m*s.ParamsPerCoord()-1]
	switch t := any(out).(type) {
	case []float64:
		C.flowebm_rqs_grads64(k, b, mw, mh, rqCBool(inverse), 1, C.int(mode), C.long(m), buf, (*C.double)(&t[0]))
	case []float32:
		C.flowebm_rqs_grads32(k, b, mw, mh, rqCBool(inverse), 1, C.int(mode), C.long(m), buf, (*C.float)(&t[0]))
	}
}

func rqCBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// The elementwise functions of the kernel, for the tests' reference.

func rqExpMap(dst, src []float64) {
	if len(src) > 0 {
		_ = dst[len(src)-1]
		C.flowebm_spl_exp((*C.double)(&src[0]), (*C.double)(&dst[0]), C.long(len(src)))
	}
}

func rqLogMap(dst, src []float64) {
	if len(src) > 0 {
		_ = dst[len(src)-1]
		C.flowebm_spl_log((*C.double)(&src[0]), (*C.double)(&dst[0]), C.long(len(src)))
	}
}

func rqLog1pMap(dst, src []float64) {
	if len(src) > 0 {
		_ = dst[len(src)-1]
		C.flowebm_spl_log1p((*C.double)(&src[0]), (*C.double)(&dst[0]), C.long(len(src)))
	}
}
