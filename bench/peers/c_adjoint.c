/* Hand-written reverse-mode adjoints of the workloads of bench/workloads.py.
 *
 * The speed limit a compiler of gradients is measured against: each function computes
 * the workload's value and the gradient of every differentiated argument, in the
 * classic style of a hand-written adjoint.  A forward sweep runs the primal and stores
 * on a tape what the reverse sweep will need; the reverse sweep then walks the tape
 * backwards and accumulates the adjoints.  What goes on the tape:
 *   - values that the primal overwrites (the running product, Horner's accumulator,
 *     the Euler state) and values that are costly to recompute (the exponentials);
 *   - the outcome of each data-dependent branch, one byte per test;
 *   - for the recursion, one record per frame (its x and its callee's result).
 * The inputs are never written, so the reverse sweep reads them again instead of
 * taping copies.  The tape is one malloc per call, sized from the trip count before
 * the forward sweep starts (it never grows), and freed before returning.
 *
 * Every adjoint has the same signature, `adjoint_fn`:
 *   s   the scalar (float) arguments, in argument order;
 *   xs  the one array argument, or NULL;
 *   n   its length, or the integer trip-count argument;
 *   g   out: the gradients, differentiated arguments in order, an array's entries
 *       contiguous (each entry is written, so g needs no zeroing);
 * and returns the value, or NaN when the tape cannot be allocated or the input is
 * outside what the Python function accepts.
 *
 * Floating-point operations follow the Python source's order (compiled with
 * -ffp-contract=off, so that no multiply-add is fused), so the values equal CPython's.
 */
#define _DEFAULT_SOURCE  /* clock_gettime and M_2_SQRTPI under any -std */

#include <math.h>
#include <stdlib.h>
#include <time.h>

typedef double (*adjoint_fn)(const double *s, const double *xs, long n, double *g);

/* pow_loop(x, n): r = r * x, n times.  Tape: r before each product. */
double pow_loop_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)xs;
    double x = s[0];
    long trips = n > 0 ? n : 0;
    double *tape = malloc((size_t)(trips > 0 ? trips : 1) * sizeof(double));
    if (tape == NULL)
        return NAN;
    double r = 1.0;
    long i = 0;
    while (i < n) {
        tape[i] = r;
        r = r * x;
        i++;
    }
    double rb = 1.0, xb = 0.0;
    while (i > 0) {
        i--;
        xb += rb * tape[i];
        rb = rb * x;
    }
    free(tape);
    g[0] = xb;
    return r;
}

/* pow_rec(x, n): x * pow_rec(x, n - 1).  Each frame, on its way out, records its x and
 * the result of its call on the frame tape; the frame at depth d owns slots 2d, 2d+1. */
static double pow_rec_forward(double x, long n, double *frame)
{
    if (n == 0)
        return 1.0;
    double r = pow_rec_forward(x, n - 1, frame + 2);
    frame[0] = x;
    frame[1] = r;
    return x * r;
}

double pow_rec_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)xs;
    if (n < 0)  /* Python recurses until RecursionError */
        return NAN;
    double *frames = malloc((size_t)(n > 0 ? n : 1) * 2 * sizeof(double));
    if (frames == NULL)
        return NAN;
    double y = pow_rec_forward(s[0], n, frames);
    /* The frames completed innermost first; their adjoints run outermost first. */
    double yb = 1.0, xb = 0.0;
    for (long d = 0; d < n; d++) {
        xb += yb * frames[2 * d + 1];
        yb = yb * frames[2 * d];
    }
    free(frames);
    g[0] = xb;
    return y;
}

/* leaky_sum(xs): s += x if x > 0 else 0.01 * x.  Tape: the branch taken, a byte each. */
double leaky_sum_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)s;
    unsigned char *taken = malloc((size_t)(n > 0 ? n : 1));
    if (taken == NULL)
        return NAN;
    double sum = 0.0;
    for (long i = 0; i < n; i++) {
        double x = xs[i];
        if (x > 0.0) {
            taken[i] = 1;
            sum += x;
        } else {
            taken[i] = 0;
            sum += 0.01 * x;
        }
    }
    double sb = 1.0;
    for (long i = n - 1; i >= 0; i--)
        g[i] = taken[i] ? sb : 0.01 * sb;
    free(taken);
    return sum;
}

/* horner(x, coeffs): r = r * x + coeffs[i].  Tape: r before each step.
 * g[0] = d/dx, g[1 + i] = d/dcoeffs[i]. */
double horner_adjoint(const double *s, const double *coeffs, long n, double *g)
{
    double x = s[0];
    double *tape = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
    if (tape == NULL)
        return NAN;
    double r = 0.0;
    for (long i = 0; i < n; i++) {
        tape[i] = r;
        r = r * x + coeffs[i];
    }
    double rb = 1.0, xb = 0.0;
    for (long i = n - 1; i >= 0; i--) {
        g[1 + i] = rb;
        xb += rb * tape[i];
        rb = rb * x;
    }
    free(tape);
    g[0] = xb;
    return r;
}

/* logsumexp(xs): a max loop with a branch, then s += exp(xs[i] - m), m + log(s).
 * Tape: n exponentials, then the n branch bytes of the max loop. */
double logsumexp_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)s;
    if (n < 1)  /* Python raises IndexError on xs[0] */
        return NAN;
    double *e = malloc((size_t)n * (sizeof(double) + 1));
    if (e == NULL)
        return NAN;
    unsigned char *taken = (unsigned char *)(e + n);
    double m = xs[0];
    taken[0] = 0;
    for (long i = 1; i < n; i++) {
        if (xs[i] > m) {
            taken[i] = 1;
            m = xs[i];
        } else {
            taken[i] = 0;
        }
    }
    double sum = 0.0;
    for (long i = 0; i < n; i++) {
        e[i] = exp(xs[i] - m);
        sum += e[i];
    }
    double y = m + log(sum);
    double mb = 1.0, sb = 1.0 / sum;
    for (long i = n - 1; i >= 0; i--) {
        double tb = sb * e[i];  /* adjoint of xs[i] - m */
        g[i] = tb;
        mb -= tb;
    }
    /* m = xs[i] where the branch was taken: its adjoint moves to xs[i] and stops. */
    for (long i = n - 1; i >= 1; i--) {
        if (taken[i]) {
            g[i] += mb;
            mb = 0.0;
        }
    }
    g[0] += mb;
    free(e);
    return y;
}

/* rosenbrock(xs): s += 100 (xs[i+1] - xs[i]^2)^2 + (1 - xs[i])^2.  Nothing is
 * overwritten but the sum, whose adjoint is 1: the tape is empty. */
double rosenbrock_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)s;
    double sum = 0.0;
    for (long i = 0; i < n - 1; i++) {
        double a = xs[i + 1] - xs[i] * xs[i];
        double b = 1.0 - xs[i];
        sum += 100.0 * (a * a) + b * b;
    }
    if (n > 0)
        g[n - 1] = 0.0;
    for (long i = n - 2; i >= 0; i--) {
        double a = xs[i + 1] - xs[i] * xs[i];
        double b = 1.0 - xs[i];
        double ab = 200.0 * a, bb = 2.0 * b;
        g[i + 1] += ab;
        g[i] = -2.0 * xs[i] * ab - bb;
    }
    return sum;
}

/* lotka_volterra(alpha, beta, delta, gamma, n): n explicit Euler steps of the
 * predator-prey system from (10, 5), then x + y.  Tape: (x, y) before each step. */
double lotka_volterra_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)xs;
    double alpha = s[0], beta = s[1], delta = s[2], gamma = s[3];
    const double dt = 0.01;
    long steps = n > 0 ? n : 0;
    double *tape = malloc((size_t)(steps > 0 ? steps : 1) * 2 * sizeof(double));
    if (tape == NULL)
        return NAN;
    double x = 10.0, y = 5.0;
    for (long k = 0; k < steps; k++) {
        tape[2 * k] = x;
        tape[2 * k + 1] = y;
        double xn = x + dt * (alpha * x - beta * x * y);
        double yn = y + dt * (delta * x * y - gamma * y);
        x = xn;
        y = yn;
    }
    double out = x + y;
    double xb = 1.0, yb = 1.0;
    double alphab = 0.0, betab = 0.0, deltab = 0.0, gammab = 0.0;
    for (long k = steps - 1; k >= 0; k--) {
        x = tape[2 * k];
        y = tape[2 * k + 1];
        double fx = dt * xb, fy = dt * yb;  /* adjoints of the two brackets */
        alphab += fx * x;
        betab -= fx * x * y;
        deltab += fy * x * y;
        gammab -= fy * y;
        double xb_prev = xb + fx * (alpha - beta * y) + fy * delta * y;
        double yb_prev = yb - fx * beta * x + fy * (delta * x - gamma);
        xb = xb_prev;
        yb = yb_prev;
    }
    free(tape);
    g[0] = alphab;
    g[1] = betab;
    g[2] = deltab;
    g[3] = gammab;
    return out;
}

/* black_scholes(spot, strike, maturity, rate, vol), with norm_cdf(z) =
 * 0.5 (1 + erf(z / sqrt 2)).  Straight-line code: the "tape" is the locals. */
double black_scholes_adjoint(const double *s, const double *xs, long n, double *g)
{
    (void)xs;
    (void)n;
    double spot = s[0], strike = s[1], maturity = s[2], rate = s[3], vol = s[4];
    const double root2 = sqrt(2.0);
    const double inv_sqrt_pi = 0.5 * M_2_SQRTPI;  /* d/dz of 0.5 erf(z) is exp(-z^2) of it */
    /* forward */
    double root_t = sqrt(maturity);
    double sd = vol * root_t;
    double ratio = spot / strike;
    double drift = rate + 0.5 * (vol * vol);
    double num = log(ratio) + drift * maturity;
    double d1 = num / sd;
    double d2 = d1 - sd;
    double z1 = d1 / root2, z2 = d2 / root2;
    double cdf1 = 0.5 * (1.0 + erf(z1));
    double cdf2 = 0.5 * (1.0 + erf(z2));
    double disc = exp(-rate * maturity);
    double kdisc = strike * disc;
    double price = spot * cdf1 - kdisc * cdf2;
    /* reverse, from a price adjoint of 1 */
    double spotb = cdf1, cdf1b = spot;
    double kdiscb = -cdf2, cdf2b = -kdisc;
    double strikeb = kdiscb * disc, discb = kdiscb * strike;
    double d1b = cdf1b * inv_sqrt_pi * exp(-z1 * z1) / root2;
    double d2b = cdf2b * inv_sqrt_pi * exp(-z2 * z2) / root2;
    d1b += d2b;
    double sdb = -d2b;
    double numb = d1b / sd;
    sdb -= d1b * d1 / sd;
    double ratiob = numb / ratio;
    double driftb = numb * maturity;
    double maturityb = numb * drift;
    double rateb = driftb;
    double volb = driftb * vol;  /* 0.5 * 2 vol */
    spotb += ratiob / strike;
    strikeb -= ratiob * ratio / strike;
    double expb = discb * disc;  /* adjoint of -rate * maturity */
    rateb -= expb * maturity;
    maturityb -= expb * rate;
    volb += sdb * root_t;
    maturityb += sdb * vol * 0.5 / root_t;
    g[0] = spotb;
    g[1] = strikeb;
    g[2] = maturityb;
    g[3] = rateb;
    g[4] = volb;
    return price;
}

/* Run `f` k times back to back (the timed batch of bench/peers/c_adjoint.py: one
 * ctypes call per k evaluations) and store the elapsed CLOCK_MONOTONIC nanoseconds in
 * *elapsed_ns.  `f` comes in as a pointer, so it cannot be inlined into the loop and
 * hoisted out of it; the empty asm makes every call's stores count. */
double adjoint_repeat(adjoint_fn f, long k, const double *s, const double *xs, long n,
                      double *g, long long *elapsed_ns)
{
    struct timespec t0, t1;
    double y = NAN;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 0; i < k; i++) {
        y = f(s, xs, n, g);
        __asm__ __volatile__("" : : : "memory");
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *elapsed_ns = (long long)(t1.tv_sec - t0.tv_sec) * 1000000000LL
                  + (long long)(t1.tv_nsec - t0.tv_nsec);
    return y;
}
