"""Ship motion: the equations and the adaptive second-order Runge–Kutta integrator.

Physics, per ship (world frame unless noted; body +x is the nose)::

    dx/dt = v                                   x : (3,) position [m]
    dv/dt = R(q) (thrust e_x) - drag v          v : (3,) velocity [m/s]
    dq/dt = 1/2 q ⊗ (0, ω)                      q : (w, x, y, z) unit quaternion, body -> world
    dω/dt = (omega_cmd - ω) / rotation_time_constant    ω : (3,) body-frame angular velocity [rad/s]

`thrust` [m/s^2] and `omega_cmd` [rad/s, body frame] are the controls (Hubbard: forward
acceleration and commanded rotational velocity); `drag` and `rotation_time_constant` come from
`Config.controls`. Drag bounds the speed to max(|v0|, max_thrust/drag). Mass plays no part in
flight: the user's ship (inv_mass 0) flies like every other; mass only matters in collisions.

Integration: Heun's method (explicit trapezoid, order 2) with the embedded Euler step as its
error estimate (order 1), per ship:

    k1 = f(y);  k2 = f(y + h k1);  y_next = y + h/2 (k1 + k2)
    err = max(|h/2 (k2 - k1)|_pos, |h/2 (k2 - k1)|_vel)      (Euclidean norms, [m] and [m/s])

A step is accepted when err <= tolerance (or h is already min_step), then q is renormalised.
Either way the next step is h * clamp(SAFETY (tol/err)^(1/2), SHRINK_MIN, GROW_MAX) — the
exponent 1/(p+1) with p = 1, the order of the error estimate — clamped to [min_step, max_step]; a NaN
error (a NaN in the state) shrinks it as a huge one would, so the step still ends, at min_step.
The step is cut to land exactly on the end of the call (the last stretch shorter than 2h is
taken in two equal halves, so no sliver of a step remains); such a cut does not shrink the
remembered size.
Each ship's step size is remembered across calls. After `max_substeps` accepted sub-steps in
one call, the rest of the interval is covered in ceil(rest / max_step) equal uncontrolled
steps and the ship is counted as capped, so the work per call is bounded.

Two backends run exactly this algorithm: a numba kernel batched over ships (prange) and a
plain numpy reference vectorised over the ships still integrating; tests compare them.
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np
from numba import njit, prange

from ..config import Config
from ..state import ShipState, quat_to_matrix
from ..threads import ThreadChoice

SAFETY = 0.9      # keep the proposed step a little under the one that would just meet tol
SHRINK_MIN = 0.2  # at most 5x smaller per attempt
GROW_MAX = 5.0    # at most 5x larger per accepted step
PARALLEL_MIN_SHIPS = 1000  # fewer ships run the kernel on one thread
PARALLEL_CHUNK = 256  # ships per dynamically scheduled work item of the parallel kernel


@dataclass
class StepStats:
    """What one `Integrator.step` call did, over all ships.

    substeps_total : accepted sub-steps summed over ships
    substeps_max   : most accepted sub-steps taken by one ship
    rejected       : rejected attempts summed over ships
    capped         : ships that reached max_substeps and finished with uncontrolled steps
    step_min, step_max, step_mean : accepted sub-step sizes [s] (0 when no ships)
    """

    substeps_total: int = 0
    substeps_max: int = 0
    rejected: int = 0
    capped: int = 0
    step_min: float = 0.0
    step_max: float = 0.0
    step_mean: float = 0.0


class Integrator:
    """Adaptive Heun/Euler integrator for `n` ships; remembers each ship's step size.

    cfg     : Config (uses .integrator and .controls)
    n       : number of ships the states passed to `step` will have
    backend : "numba" (batched kernel) or "numpy" (reference)
    """

    def __init__(self, cfg: Config, n: int, backend: str = "numba"):
        if backend not in ("numba", "numpy"):
            raise ValueError(f"backend must be 'numba' or 'numpy', got {backend!r}")
        self.cfg, self.n, self.backend = cfg, int(n), backend
        # first attempt at the largest step: rejections shrink it within a call
        self.h = np.full(self.n, cfg.integrator.max_step)
        self._tallies = Tallies(*_Counts.empty(self.n).arrays())  # the kernels' per-ship outputs
        i, c = cfg.integrator, cfg.controls  # (a frozen config: read once, not every call)
        self._params = StepParams(float(c.drag), float(c.rotation_time_constant), float(i.tolerance),
                                  float(i.min_step), float(i.max_step), int(i.max_substeps))
        self._checked = ()  # the state arrays last found fit for the kernels (_check_contiguous)
        self.threads = ThreadChoice()  # serial or parallel per step, whichever was measured faster

    def step(self, state: ShipState, dt: float) -> StepStats:
        """Advance every ship of `state` in place by `dt` [s] of simulation time."""
        if state.n != self.n:
            raise ValueError(f"state has {state.n} ships, integrator was made for {self.n}")
        if not dt > 0:
            raise ValueError(f"dt must be > 0, got {dt}")
        if self.backend == "numba":
            arrays = self.kernel_args(state, dt)
            if self.n >= PARALLEL_MIN_SHIPS:
                # dynamic chunks: a thread whose core is busy elsewhere does not hold up the others;
                # and serial when that was measured faster (cores taken by other programs)
                with self.threads.threads_for(self.n) as k, numba.parallel_chunksize(PARALLEL_CHUNK):
                    return StepStats(*(heun_adaptive_serial if k == 1 else _heun_adaptive_parallel)(arrays))
            # waking the thread team costs more than it saves on a small batch
            return StepStats(*heun_adaptive_serial(arrays))
        counts = _Counts.empty(self.n)
        _heun_adaptive_numpy(state, self.h, float(dt), *self._params, counts)
        return counts.stats()

    def kernel_args(self, state: ShipState, dt: float) -> StepArgs:
        """The numba kernels' arguments for a step of dt [s] (compiled_sample.py calls the serial
        kernel inside its own)."""
        ship = Ships(state.pos, state.vel, state.quat, state.omega, state.thrust, state.omega_cmd)
        if len(ship) != len(self._checked) or not all(map(operator.is_, ship, self._checked)):
            _check_contiguous(state)  # arrays keep their layout: checked once per array, not per call
            self._checked = ship
        return StepArgs(ship, self.h, float(dt), self._params, self._tallies)


# ---------------------------------------------------------------------------------------
# bookkeeping shared by both backends

@dataclass
class _Counts:
    """Per-ship tallies written by a backend: (n,) arrays."""

    accepted: np.ndarray
    rejected: np.ndarray
    capped: np.ndarray
    h_min: np.ndarray
    h_max: np.ndarray
    h_sum: np.ndarray

    @classmethod
    def empty(cls, n):
        return cls(np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64),
                   np.full(n, np.inf), np.zeros(n), np.zeros(n))

    def arrays(self):
        return self.accepted, self.rejected, self.capped, self.h_min, self.h_max, self.h_sum

    def stats(self) -> StepStats:
        if len(self.accepted) == 0:
            return StepStats()
        total = int(self.accepted.sum())
        return StepStats(substeps_total=total, substeps_max=int(self.accepted.max()),
                         rejected=int(self.rejected.sum()), capped=int(self.capped.sum()),
                         step_min=float(self.h_min.min()), step_max=float(self.h_max.max()),
                         step_mean=float(self.h_sum.sum() / max(total, 1)))


def _check_contiguous(state: ShipState) -> None:
    for name, shape in (("pos", (3,)), ("vel", (3,)), ("quat", (4,)), ("omega", (3,)), ("thrust", ()),
                        ("omega_cmd", (3,))):
        a = getattr(state, name)
        if a.dtype != np.float64 or a.shape != (state.n, *shape) or not a.flags.c_contiguous:
            raise ValueError(f"state.{name} must be C-contiguous float64 of shape {(state.n, *shape)}, "
                             f"got {a.dtype} {a.shape}")


# ---------------------------------------------------------------------------------------
# numba backend: one kernel, every ship independent (prange)

@njit(cache=True, error_model="numpy")
def _accel_qdot(v, q, w, thrust, drag):
    """dv/dt (3-tuple) and dq/dt (4-tuple) of one ship; v, w 3-tuples, q a (w, x, y, z) 4-tuple."""
    qw, qx, qy, qz = q
    wx, wy, wz = w
    # nose direction R(q) e_x: the first column of the rotation matrix
    nx = 1.0 - 2.0 * (qy * qy + qz * qz)
    ny = 2.0 * (qx * qy + qw * qz)
    nz = 2.0 * (qx * qz - qw * qy)
    dv = (thrust * nx - drag * v[0], thrust * ny - drag * v[1], thrust * nz - drag * v[2])
    dq = (0.5 * (-qx * wx - qy * wy - qz * wz),  # 1/2 q ⊗ (0, ω)
          0.5 * (qw * wx + qy * wz - qz * wy),
          0.5 * (qw * wy - qx * wz + qz * wx),
          0.5 * (qw * wz + qx * wy - qy * wx))
    return dv, dq


@njit(cache=True, error_model="numpy")
def _heun(x, v, q, w, h, thrust, c, drag, tau):
    """One Heun step of size h for one ship (tuples x, v, w (3), q (4), command c (3)).
    Returns (x, v, q, w) after the step, q renormalised, and the Euler error norm."""
    a1, dq1 = _accel_qdot(v, q, w, thrust, drag)
    rate = 1.0 / tau
    dw1 = ((c[0] - w[0]) * rate, (c[1] - w[1]) * rate, (c[2] - w[2]) * rate)
    # Euler predictor
    ve = (v[0] + h * a1[0], v[1] + h * a1[1], v[2] + h * a1[2])
    qe = (q[0] + h * dq1[0], q[1] + h * dq1[1], q[2] + h * dq1[2], q[3] + h * dq1[3])
    we = (w[0] + h * dw1[0], w[1] + h * dw1[1], w[2] + h * dw1[2])
    a2, dq2 = _accel_qdot(ve, qe, we, thrust, drag)
    dw2 = ((c[0] - we[0]) * rate, (c[1] - we[1]) * rate, (c[2] - we[2]) * rate)
    hh = 0.5 * h
    xn = (x[0] + hh * (v[0] + ve[0]), x[1] + hh * (v[1] + ve[1]), x[2] + hh * (v[2] + ve[2]))
    vn = (v[0] + hh * (a1[0] + a2[0]), v[1] + hh * (a1[1] + a2[1]), v[2] + hh * (a1[2] + a2[2]))
    qn = (q[0] + hh * (dq1[0] + dq2[0]), q[1] + hh * (dq1[1] + dq2[1]),
          q[2] + hh * (dq1[2] + dq2[2]), q[3] + hh * (dq1[3] + dq2[3]))
    wn = (w[0] + hh * (dw1[0] + dw2[0]), w[1] + hh * (dw1[1] + dw2[1]), w[2] + hh * (dw1[2] + dw2[2]))
    s = math.sqrt(qn[0] * qn[0] + qn[1] * qn[1] + qn[2] * qn[2] + qn[3] * qn[3])
    qn = (qn[0] / s, qn[1] / s, qn[2] / s, qn[3] / s)
    # embedded Euler error: h/2 (k2 - k1) for position (k = v) and velocity (k = a)
    ex, ey, ez = hh * (ve[0] - v[0]), hh * (ve[1] - v[1]), hh * (ve[2] - v[2])
    fx, fy, fz = hh * (a2[0] - a1[0]), hh * (a2[1] - a1[1]), hh * (a2[2] - a1[2])
    err = math.sqrt(max(ex * ex + ey * ey + ez * ez, fx * fx + fy * fy + fz * fz))  # one sqrt: monotone
    return xn, vn, qn, wn, err


# error_model="numpy": no zero-division checks in the inner loop (inputs are validated outside)
class Ships(NamedTuple):
    """The ships' state the integrator reads and writes in place (ShipState's arrays, float64)."""

    pos: np.ndarray        # (n, 3) [m]
    vel: np.ndarray        # (n, 3) [m/s]
    quat: np.ndarray       # (n, 4) unit quaternions (w, x, y, z)
    omega: np.ndarray      # (n, 3) [rad/s], angular velocity
    thrust: np.ndarray     # (n,) [m/s^2], forward acceleration commanded
    omega_cmd: np.ndarray  # (n, 3) [rad/s], angular velocity commanded


class StepParams(NamedTuple):
    """The config's integrator settings."""

    drag: float            # [1/s]
    tau: float             # rotation time constant [s]
    tol: float             # local error tolerance [m or m/s]
    h_lo: float            # min_step [s]
    h_hi: float            # max_step [s]
    cap: int               # max_substeps


class Tallies(NamedTuple):
    """Per-ship outputs of a step: (n,) arrays, every entry rewritten each call."""

    accepted: np.ndarray   # int64, sub-steps accepted
    rejected: np.ndarray   # int64, attempts rejected
    capped: np.ndarray     # int64, 1 where max_substeps was reached
    h_min: np.ndarray      # float64 [s], smallest accepted sub-step
    h_max: np.ndarray      # float64 [s], largest
    h_sum: np.ndarray      # float64 [s], their sum


class StepArgs(NamedTuple):
    """A step's kernel arguments (Integrator.kernel_args)."""

    ships: Ships
    h_mem: np.ndarray      # (n,) float64 [s], each ship's step size, carried from call to call
    dt: float              # [s]
    params: StepParams
    tallies: Tallies


@njit(cache=True, parallel=True, error_model="numpy")
def _heun_adaptive_parallel(args):
    """Advance every ship by args.dt in place (see the module docstring for the algorithm), ships
    spread over threads (args: StepArgs). Returns StepStats' fields (_tally: in the same call, one
    dispatch a step)."""
    # a parallel loop body takes arrays and scalars from outside, not tuples of them
    pos, vel, quat, omega, thrust, omega_cmd = args.ships
    drag, tau, tol, h_lo, h_hi, cap = args.params
    n_acc, n_rej, capped, h_min, h_max, h_sum = args.tallies
    h_mem, dt = args.h_mem, args.dt
    for i in prange(pos.shape[0]):
        _advance_ship(i, pos, vel, quat, omega, thrust, omega_cmd, h_mem, dt, drag, tau, tol, h_lo, h_hi, cap,
                      n_acc, n_rej, capped, h_min, h_max, h_sum)
    return _tally(args.tallies)


@njit(cache=True, error_model="numpy")
def heun_adaptive_serial(args):
    """_heun_adaptive_parallel on the calling thread."""
    pos, vel, quat, omega, thrust, omega_cmd = args.ships
    drag, tau, tol, h_lo, h_hi, cap = args.params
    n_acc, n_rej, capped, h_min, h_max, h_sum = args.tallies
    for i in range(pos.shape[0]):
        _advance_ship(i, pos, vel, quat, omega, thrust, omega_cmd, args.h_mem, args.dt, drag, tau, tol, h_lo, h_hi,
                      cap, n_acc, n_rej, capped, h_min, h_max, h_sum)
    return _tally(args.tallies)


@njit(cache=True, error_model="numpy")
def _advance_ship(i, pos, vel, quat, omega, thrust, omega_cmd, h_mem, dt, drag, tau, tol, h_lo, h_hi, cap,
                  n_acc, n_rej, capped, h_min, h_max, h_sum):
    """Ship i's adaptive steps over dt (StepArgs' fields, unpacked: a parallel loop's body takes
    arrays and scalars, not tuples of them)."""
    x = (pos[i, 0], pos[i, 1], pos[i, 2])
    v = (vel[i, 0], vel[i, 1], vel[i, 2])
    q = (quat[i, 0], quat[i, 1], quat[i, 2], quat[i, 3])
    w = (omega[i, 0], omega[i, 1], omega[i, 2])
    th, c = thrust[i], (omega_cmd[i, 0], omega_cmd[i, 1], omega_cmd[i, 2])
    rest, h = dt, h_mem[i]
    acc, rej, lo, hi, total = 0, 0, np.inf, 0.0, 0.0  # tallies kept local in the hot loop
    while rest > 0.0 and acc < cap:
        h_try = _next_step(h, rest)
        xn, vn, qn, wn, err = _heun(x, v, q, w, h_try, th, c, drag, tau)
        factor = GROW_MAX
        if err > 0.0:
            factor = min(GROW_MAX, max(SHRINK_MIN, SAFETY * math.sqrt(tol / err)))
        elif err != err:  # NaN (a NaN in the state): shrink as for a huge error, so min_step ends the call
            factor = SHRINK_MIN
        h_new = min(h_hi, max(h_lo, h_try * factor))
        if err <= tol or h_try <= h_lo:
            x, v, q, w = xn, vn, qn, wn
            rest = 0.0 if h_try == rest else rest - h_try
            acc += 1
            lo, hi, total = min(lo, h_try), max(hi, h_try), total + h_try
            if h_try < h and factor >= 1.0:  # cut short at the end: keep the larger size
                h_new = max(h_new, h)
        else:
            rej += 1
        h = h_new
    capped[i] = 0
    if rest > 0.0:  # cap reached: equal uncontrolled steps no longer than max_step
        m = int(math.ceil(rest / h_hi))
        h_eq = rest / m
        for _ in range(m):
            x, v, q, w, _err = _heun(x, v, q, w, h_eq, th, c, drag, tau)
        capped[i] = 1
        acc += m
        lo, hi, total = min(lo, h_eq), max(hi, h_eq), total + m * h_eq
    n_acc[i], n_rej[i], h_min[i], h_max[i], h_sum[i] = acc, rej, lo, hi, total
    h_mem[i] = h
    for j in range(3):
        pos[i, j], vel[i, j], omega[i, j] = x[j], v[j], w[j]
    for j in range(4):
        quat[i, j] = q[j]


@njit(cache=True)
def _tally(tallies):
    """StepStats' fields from the kernels' per-ship outputs, in one compiled pass."""
    n_acc, n_rej, capped, h_min, h_max, h_sum = tallies
    n = n_acc.shape[0]
    if n == 0:
        return 0, 0, 0, 0, 0.0, 0.0, 0.0
    total, most, rej, cap, lo, hi, length = 0, 0, 0, 0, np.inf, 0.0, 0.0
    for i in range(n):
        total += n_acc[i]
        most = max(most, n_acc[i])
        rej += n_rej[i]
        cap += capped[i]
        lo, hi, length = min(lo, h_min[i]), max(hi, h_max[i]), length + h_sum[i]
    return total, most, rej, cap, lo, hi, length / max(total, 1)

@njit(cache=True)
def _next_step(h, rest):
    """Size of the next attempt: h, or the rest of the interval in one or two equal steps (two
    when one would overshoot and h would leave a sliver), so no step ends up tiny."""
    if rest <= h:
        return rest
    if rest < 2.0 * h:
        return 0.5 * rest
    return h


# ---------------------------------------------------------------------------------------
# numpy reference: the same algorithm, vectorised over the ships still integrating

def derivatives_numpy(x, v, q, w, thrust, omega_cmd, drag, tau):
    """f(y) for m ships: x, v, w, omega_cmd (m, 3); q (m, 4); thrust (m,). Returns (dx, dv, dq, dw)."""
    nose = quat_to_matrix(q)[:, :, 0]
    dv = thrust[:, None] * nose - drag * v
    dq = 0.5 * quat_multiply(q, np.concatenate([np.zeros((len(w), 1)), w], axis=1))
    return v, dv, dq, (omega_cmd - w) * (1.0 / tau)


def quat_multiply(a, b):
    """Hamilton product of (m, 4) quaternions (w, x, y, z)."""
    aw, ax, ay, az = a.T
    bw, bx, by, bz = b.T
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=1)


def heun_numpy(y, h, thrust, omega_cmd, drag, tau):
    """One Heun step for m ships. y = (x, v, q, w) arrays; h (m,). Returns (y_next, err (m,))."""
    k1 = derivatives_numpy(*y, thrust, omega_cmd, drag, tau)
    ye = tuple(a + h[:, None] * k for a, k in zip(y, k1))
    k2 = derivatives_numpy(*ye, thrust, omega_cmd, drag, tau)
    nxt = [a + 0.5 * h[:, None] * (ka + kb) for a, ka, kb in zip(y, k1, k2)]
    nxt[2] = nxt[2] / np.linalg.norm(nxt[2], axis=1, keepdims=True)
    err_x = np.linalg.norm(0.5 * h[:, None] * (k2[0] - k1[0]), axis=1)
    err_v = np.linalg.norm(0.5 * h[:, None] * (k2[1] - k1[1]), axis=1)
    return tuple(nxt), np.maximum(err_x, err_v)


def _heun_adaptive_numpy(state, h_mem, dt, drag, tau, tol, h_lo, h_hi, cap, counts):
    s, c = state, counts
    rest = np.full(state.n, dt)
    while True:
        idx = np.flatnonzero((rest > 0.0) & (c.accepted < cap))
        if len(idx) == 0:
            break
        h = h_mem[idx]
        r = rest[idx]
        h_try = np.where(r <= h, r, np.where(r < 2.0 * h, 0.5 * r, h))
        y = (s.pos[idx], s.vel[idx], s.quat[idx], s.omega[idx])
        nxt, err = heun_numpy(y, h_try, s.thrust[idx], s.omega_cmd[idx], drag, tau)
        with np.errstate(divide="ignore"):
            factor = np.where(err > 0.0, np.clip(SAFETY * np.sqrt(tol / err), SHRINK_MIN, GROW_MAX),
                              np.where(np.isnan(err), SHRINK_MIN, GROW_MAX))  # NaN: as the kernel
        h_new = np.clip(h_try * factor, h_lo, h_hi)
        ok = (err <= tol) | (h_try <= h_lo)
        keep_larger = ok & (h_try < h) & (factor >= 1.0)
        h_new[keep_larger] = np.maximum(h_new[keep_larger], h[keep_larger])
        a = idx[ok]
        s.pos[a], s.vel[a], s.quat[a], s.omega[a] = (arr[ok] for arr in nxt)
        rest[a] = np.where(h_try[ok] == rest[a], 0.0, rest[a] - h_try[ok])
        c.accepted[a] += 1
        c.h_min[a] = np.minimum(c.h_min[a], h_try[ok])
        c.h_max[a] = np.maximum(c.h_max[a], h_try[ok])
        c.h_sum[a] += h_try[ok]
        c.rejected[idx[~ok]] += 1
        h_mem[idx] = h_new
    _finish_capped_numpy(state, rest, dt, drag, tau, h_hi, counts)


def _finish_capped_numpy(state, rest, dt, drag, tau, h_hi, c):
    s = state
    idx = np.flatnonzero(rest > 0.0)
    if len(idx) == 0:
        return
    m = np.ceil(rest[idx] / h_hi).astype(np.int64)
    h_eq = rest[idx] / m
    for j in range(int(m.max())):
        live = j < m
        b = idx[live]
        nxt, _ = heun_numpy((s.pos[b], s.vel[b], s.quat[b], s.omega[b]), h_eq[live], s.thrust[b],
                            s.omega_cmd[b], drag, tau)
        s.pos[b], s.vel[b], s.quat[b], s.omega[b] = nxt
    c.capped[idx] = 1
    c.accepted[idx] += m
    c.h_min[idx] = np.minimum(c.h_min[idx], h_eq)
    c.h_max[idx] = np.maximum(c.h_max[idx], h_eq)
    c.h_sum[idx] += m * h_eq
