"""Adaptive Heun/Euler integrator: order, tolerance, numba == numpy, unit quaternions."""
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).parent))
from helpers import closed_form, fixed_step_cfg, integrate, make_cfg, random_state  # noqa: E402

from spaceship_sim.dynamics import Integrator  # noqa: E402
from spaceship_sim.dynamics import integrator  # noqa: E402
from spaceship_sim.dynamics.integrator import heun_numpy, quat_multiply  # noqa: E402

BACKENDS = ["numba", "numpy"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_step_error_shrinks_4x_when_step_halves(backend):
    rng = np.random.default_rng(0)
    s0 = random_state(rng, 8, spin=False)
    errors = []
    for h in (0.04, 0.02, 0.01):
        cfg = fixed_step_cfg(h)
        s = s0.copy()
        integrate(Integrator(cfg, s.n, backend), s, total=2.0, dt=0.2)
        pos, vel = closed_form(s0, cfg.controls.drag, 2.0)
        errors.append(max(np.abs(s.pos - pos).max(), np.abs(s.vel - vel).max()))
    ratios = [errors[0] / errors[1], errors[1] / errors[2]]
    assert all(3.6 < r < 4.4 for r in ratios), (errors, ratios)


def test_quaternion_of_constant_spin_converges_at_second_order():
    """omega_cmd = ω keeps ω constant, so q(t) = q0 ⊗ (cos(|ω|t/2), sin(|ω|t/2) ω/|ω|)."""
    rng = np.random.default_rng(1)
    s0 = random_state(rng, 6)
    s0.omega_cmd[:] = s0.omega
    t = 1.5
    angle = np.linalg.norm(s0.omega, axis=1)
    exact = quat_multiply(s0.quat, np.column_stack([np.cos(angle * t / 2),
                                                     np.sin(angle * t / 2)[:, None] * s0.omega / angle[:, None]]))
    errors = []
    for h in (0.05, 0.025):
        s = s0.copy()
        integrate(Integrator(fixed_step_cfg(h), s.n), s, total=t, dt=0.25)
        errors.append(np.abs(s.quat - exact).max())
    assert 3.5 < errors[0] / errors[1] < 4.5, errors


def test_accepted_step_meets_tolerance_against_closed_form():
    """Every step the controller would accept (err <= tol) is within tol of the exact solution."""
    rng = np.random.default_rng(2)
    s0 = random_state(rng, 400, spin=False)
    tol, drag = 1e-4, make_cfg().controls.drag
    h = rng.uniform(1e-4, 0.02, s0.n)
    (x, v, _q, _w), err = heun_numpy((s0.pos, s0.vel, s0.quat, s0.omega), h, s0.thrust, s0.omega_cmd, drag, 0.25)
    ok = err <= tol
    assert 50 < ok.sum() < s0.n  # both outcomes exercised
    for i in np.flatnonzero(ok):
        one = s0.copy()
        for name in ("pos", "vel", "quat", "thrust"):
            setattr(one, name, getattr(s0, name)[i:i + 1])
        pos, vel = closed_form(one, drag, h[i])
        assert np.linalg.norm(x[i] - pos[0]) <= tol and np.linalg.norm(v[i] - vel[0]) <= tol


@pytest.mark.parametrize("backend", BACKENDS)
def test_adaptive_run_error_is_bounded_by_its_steps(backend):
    rng = np.random.default_rng(3)
    s0 = random_state(rng, 50, spin=False)
    cfg = make_cfg()
    s = s0.copy()
    integ = Integrator(cfg, s.n, backend)
    total = 3.0
    stats = integrate(integ, s, total=total, dt=1 / 30)
    pos, vel = closed_form(s0, cfg.controls.drag, total)
    per_ship_steps = sum(st_.substeps_max for st_ in stats)
    tol = cfg.integrator.tolerance
    # local errors add up; a velocity error also moves the position for the rest of the run
    assert np.abs(s.vel - vel).max() <= per_ship_steps * tol
    assert np.abs(s.pos - pos).max() <= per_ship_steps * tol * (1 + total)
    assert np.abs(s.pos - pos).max() < 5e-3
    assert all(st_.capped == 0 and cfg.integrator.min_step <= st_.step_min <= st_.step_max
               <= cfg.integrator.max_step for st_ in stats)
    assert all(integ.h >= cfg.integrator.min_step) and all(integ.h <= cfg.integrator.max_step)


def test_tighter_tolerance_takes_smaller_steps_and_is_more_accurate():
    rng = np.random.default_rng(4)
    s0 = random_state(rng, 30, spin=False)
    results = []
    for tol in (1e-3, 1e-5):
        s = s0.copy()
        cfg = make_cfg(integrator=dict(tolerance=tol, max_substeps=10_000))  # no cap: pure step control
        stats = integrate(Integrator(cfg, s.n), s, total=1.0, dt=0.1)
        pos, _ = closed_form(s0, 0.2, 1.0)
        results.append((sum(x.substeps_total for x in stats), np.abs(s.pos - pos).max()))
    (steps_loose, err_loose), (steps_tight, err_tight) = results
    assert steps_tight > 3 * steps_loose and err_tight < err_loose


def test_substep_cap_is_honoured_and_counted():
    rng = np.random.default_rng(5)
    s = random_state(rng, 20)
    cfg = make_cfg(integrator=dict(tolerance=1e-9, min_step=1e-5, max_substeps=3))
    stats = Integrator(cfg, s.n).step(s, 0.1)
    assert stats.capped == 20
    # 3 controlled steps, then ceil(rest / max_step) equal steps of at most max_step
    assert stats.substeps_max <= 3 + int(np.ceil(0.1 / cfg.integrator.max_step))
    assert stats.step_max <= cfg.integrator.max_step


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_nan_in_the_state_ends_the_step(backend):
    """A NaN error estimate shrinks the step as a huge one would, so the ship's step ends at
    min_step (its state NaN, which the broad phase then refuses) instead of rejecting forever, and
    the other ships are integrated as without it."""
    rng = np.random.default_rng(3)
    s = random_state(rng, 4)
    clean = s.copy()
    s.vel[2, 1] = np.nan
    cfg = make_cfg()
    stats = Integrator(cfg, s.n, backend).step(s, 0.05)
    Integrator(cfg, clean.n, backend).step(clean, 0.05)
    assert np.isnan(s.pos[2]).any() and stats.rejected > 0
    keep = [0, 1, 3]
    for name in ("pos", "vel", "quat", "omega"):
        np.testing.assert_array_equal(getattr(s, name)[keep], getattr(clean, name)[keep], err_msg=name)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), dt=st.floats(1e-3, 0.1),
       tol=st.floats(1e-7, 1e-2), min_step=st.floats(1e-5, 1e-3), max_frac=st.floats(0.0, 1.0),
       cap=st.integers(1, 40), calls=st.integers(1, 4))
def test_numba_matches_numpy(seed, n, dt, tol, min_step, max_frac, cap, calls):
    rng = np.random.default_rng(seed)
    max_step = max(min_step, dt / 20) + max_frac * 0.05  # dt / max_step bounds the numpy loop's length
    cfg = make_cfg(integrator=dict(tolerance=tol, min_step=min_step, max_step=max_step, max_substeps=cap))
    a = random_state(rng, n)
    b = a.copy()
    fast, ref = Integrator(cfg, n, "numba"), Integrator(cfg, n, "numpy")
    for _ in range(calls):
        sa, sb = fast.step(a, dt), ref.step(b, dt)
        assert (sa.substeps_total, sa.substeps_max, sa.rejected, sa.capped) == \
            (sb.substeps_total, sb.substeps_max, sb.rejected, sb.capped)
        assert np.isclose(sa.step_mean, sb.step_mean, rtol=1e-12, atol=0)
    for name in ("pos", "vel", "quat", "omega"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(fast.h, ref.h, rtol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quaternions_stay_unit(backend):
    rng = np.random.default_rng(6)
    s = random_state(rng, 200)
    s.omega_cmd *= 3  # fast spin, past the usual limits
    integrate(Integrator(make_cfg(integrator=dict(tolerance=1e-2)), s.n, backend), s, total=4.0, dt=1 / 30)
    np.testing.assert_allclose(np.linalg.norm(s.quat, axis=1), 1.0, atol=1e-14)


def test_user_ship_with_infinite_mass_flies_like_the_others():
    rng = np.random.default_rng(7)
    s = random_state(rng, 2)
    s.pos[1], s.vel[1], s.quat[1], s.omega[1] = s.pos[0], s.vel[0], s.quat[0], s.omega[0]
    s.thrust[1], s.omega_cmd[1] = s.thrust[0], s.omega_cmd[0]
    s.inv_mass[0] = 0.0
    integrate(Integrator(make_cfg(), 2), s, total=1.0, dt=1 / 30)
    np.testing.assert_array_equal(s.pos[0], s.pos[1])


def test_bad_input_is_rejected():
    s = random_state(np.random.default_rng(8), 3)
    with pytest.raises(ValueError, match="3 ships"):
        Integrator(make_cfg(), 4).step(s, 0.01)
    with pytest.raises(ValueError, match="dt"):
        Integrator(make_cfg(), 3).step(s, 0.0)
    with pytest.raises(ValueError, match="backend"):
        Integrator(make_cfg(), 3, backend="cuda")
    s.pos = np.asfortranarray(s.pos)
    with pytest.raises(ValueError, match="state.pos"):
        Integrator(make_cfg(), 3).step(s, 0.01)


def test_step_size_is_remembered_across_calls():
    s = random_state(np.random.default_rng(9), 50)
    cfg = make_cfg(integrator=dict(tolerance=1e-4))  # tight enough that no ship can keep max_step
    integ = Integrator(cfg, s.n)
    first = integ.step(s, 1 / 60)
    assert first.rejected > 0  # started at max_step, too large for this tolerance
    h_after = integ.h.copy()
    second = integ.step(s, 1 / 60)
    assert second.rejected < first.rejected / 5
    assert np.all(h_after < cfg.integrator.max_step)


def test_parallel_kernel_matches_serial(monkeypatch):
    """Large batches run the prange kernel, small ones the serial loop: the same ships and stats."""
    cfg = make_cfg(integrator=dict(tolerance=1e-4))
    a = random_state(np.random.default_rng(5), 300)
    b = a.copy()
    serial = Integrator(cfg, a.n).step(a, 0.05)
    monkeypatch.setattr(integrator, "PARALLEL_MIN_SHIPS", 1)
    parallel = Integrator(cfg, b.n).step(b, 0.05)
    assert parallel == serial
    for name in ("pos", "vel", "quat", "omega"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
