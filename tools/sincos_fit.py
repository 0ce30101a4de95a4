"""The polynomials of math-inl.h's SinCos: near-minimax (Chebyshev) fits in z = r² on [0, A²],
A = 1.5708 just past π/2, of
    S(z) = (sin r − r) / r³   (sin r = r + r·z·S(z)),  degree 6
    C(z) = (1 − cos r) / z    (cos r = 1 − z·C(z)),    degree 6,
in 50-digit arithmetic (python3-mpmath). Prints each set of coefficients rounded to double,
constant term last (Horner's order, as math-inl.h writes them), and the largest absolute error of
sin and cos with those doubles, evaluated exactly at 3000 points of r in [0, A].
Usage: /usr/bin/python3 tools/sincos_fit.py [degree]"""
import sys

from mpmath import chebyfit, cos, fabs, log, mp, mpf, nstr, polyval, sin, sqrt

mp.dps = 50
A = mpf("1.5708")
DEGREE = int(sys.argv[1]) if len(sys.argv) > 1 else 6


def s_of_z(z):
    if z == 0:
        return mpf(-1) / 6
    r = sqrt(z)
    return (sin(r) - r) / (r * z)


def c_of_z(z):
    if z == 0:
        return mpf(1) / 2
    r = sqrt(z)
    return (1 - cos(r)) / z


for name, g, exact, approx in (
    ("sin", s_of_z, sin, lambda r, z, p: r + r * z * polyval(p, z)),
    ("cos", c_of_z, cos, lambda r, z, p: 1 - z * polyval(p, z)),
):
    poly = chebyfit(g, [0, A * A], DEGREE + 1)
    doubles = [mpf(float(c)) for c in poly]  # highest degree first
    worst = max(
        fabs(exact(r) - approx(r, r * r, doubles)) for r in (A * i / 3000 for i in range(1, 3001))
    )
    print(f"{name}: error 2^{nstr(log(worst, 2), 4)}")
    for c in doubles:
        print(f"  {float(c)!r}")
