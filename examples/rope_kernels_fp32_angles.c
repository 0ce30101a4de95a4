/* A subtly wrong plugin: rope_kernels.c with the angle p·ω formed in float, as kernels do that
 * build their angles (or their cos/sin cache) in the activation dtype. It agrees with the fp64
 * reference to about 1e-3 while positions stay below 10^4, which is all most test suites try; the
 * angle's rounding error grows with p (ulp(p·ω) = 2^-24·p·ω), and by p = 2^20 the first pairs are
 * rotated by an angle off by up to 0.06 rad. posenc's differential check at long positions, and
 * its tolerance of a few ulp, name it. */
#define ANGLE float
#define KERNEL_NAME "fp32_angles"
#include "rope_kernels.c"
