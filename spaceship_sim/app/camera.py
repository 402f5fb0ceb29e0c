"""Cameras: chase (behind the user's ship), free orbit, and the demo's action camera.

Plain numpy. Matrices are (4, 4) float64 for column vectors (p_clip = P @ V @ p_world), the
OpenGL convention; `gl_bytes` turns one into the column-major float32 bytes a shader wants.
"""
from __future__ import annotations

import math

import numpy as np

from ..state import quat_to_matrix


def perspective(fovy_deg: float, aspect: float, near: float, far: float) -> np.ndarray:
    """OpenGL perspective projection (right-handed eye space, camera looks down -z)."""
    f = 1.0 / math.tan(math.radians(fovy_deg) / 2)
    m = np.zeros((4, 4))
    m[0, 0], m[1, 1] = f / aspect, f
    m[2, 2], m[2, 3] = (far + near) / (near - far), 2 * far * near / (near - far)
    m[3, 2] = -1.0
    return m


def look_at(eye, target, up) -> np.ndarray:
    """World -> eye transform of a camera at `eye` looking at `target`, `up` roughly up."""
    eye, target, up = (np.asarray(x, np.float64) for x in (eye, target, up))
    f = target - eye
    f /= np.linalg.norm(f)
    s = np.cross(f, up)
    if np.linalg.norm(s) < 1e-9:  # up parallel to the view direction: pick any perpendicular
        s = np.cross(f, [0.0, 0.0, 1.0] if abs(f[2]) < 0.9 else [0.0, 1.0, 0.0])
    s /= np.linalg.norm(s)
    u = np.cross(s, f)
    m = np.eye(4)
    m[0, :3], m[1, :3], m[2, :3] = s, u, -f
    m[:3, 3] = -m[:3, :3] @ eye
    return m


def gl_bytes(m: np.ndarray) -> bytes:
    """Column-major float32 bytes of a (4, 4) matrix for a GLSL mat4 uniform."""
    return np.ascontiguousarray(m.T, dtype=np.float32).tobytes()


def project(points: np.ndarray, view_proj: np.ndarray, width: int, height: int):
    """World points (k, 3) -> pixel coordinates (k, 2) (x right, y down from the top-left
    corner, as in a saved image) and a (k,) bool mask of points in front of the camera."""
    p = np.c_[np.asarray(points, np.float64), np.ones(len(points))] @ view_proj.T
    w = p[:, 3]
    ndc = p[:, :2] / np.where(np.abs(w) > 1e-12, w, 1e-12)[:, None]
    px = np.stack([(ndc[:, 0] + 1) / 2 * width, (1 - ndc[:, 1]) / 2 * height], 1)
    return px, w > 0


class Camera:
    """Produces view and projection matrices; `mode` is "chase" or "orbit" ("action" in the demo).

    chase : behind and above ship 0, looking past its nose (body +x forward, body +z up)
    orbit : around a target point (ship 0) at yaw/pitch/distance changed with the mouse
    action: orbits slowly around the closest pair of ships, so collisions stay in view
    """

    MODES = ("chase", "orbit")

    def __init__(self, mode: str = "chase", fovy: float = 60.0, smoothing: float = 0.15):
        self.mode, self.home, self.fovy, self.smoothing = mode, mode, fovy, smoothing
        self.yaw, self.pitch, self.distance = 0.6, 0.35, 60.0
        self.eye = self.target = self.up = None  # smoothed pose; None snaps on the next update
        self.far = 2000.0
        self.aspect = 16 / 9  # width / height of the view (the app sets it): framing needs the narrower angle
        self.follow: tuple[int, int] | None = None  # the action camera's pair, when one was picked
        self.subject: tuple[int, int] | None = None  # the pair the action camera looks at now

    def toggle(self) -> None:
        """C key: the home mode (chase, or the demo's action camera) <-> free orbit."""
        self.mode = "orbit" if self.mode == self.home else self.home
        self.eye = None

    def drag(self, dx: float, dy: float) -> None:
        self.yaw -= dx * 0.01
        self.pitch = float(np.clip(self.pitch + dy * 0.01, -1.5, 1.5))

    def zoom(self, steps: float) -> None:
        self.distance = float(np.clip(self.distance * 0.9 ** steps, 2.0, 1500.0))

    def update(self, pos: np.ndarray, quat: np.ndarray, radius: np.ndarray, arena_size: float, dt: float,
               colliding: np.ndarray | None = None) -> None:
        """Move towards the wanted pose for the current ship state ((n, 3), (n, 4), (n,) world);
        colliding: (k, 2) ship pairs colliding now, which the action camera looks at first."""
        self.far = max(2000.0, 4 * arena_size)
        eye, target, up = self._wanted(pos, quat, radius, dt, colliding)
        if self.eye is None:
            self.eye, self.target, self.up = eye, target, up
            return
        a = self.smoothing
        self.eye = self.eye + a * (eye - self.eye)
        self.target = self.target + a * (target - self.target)
        self.up = self.up + a * (up - self.up)

    def _wanted(self, pos, quat, radius, dt, colliding):
        if self.mode == "chase":
            r = max(float(radius[0]), 1.0)
            R = quat_to_matrix(quat[0])
            fwd, up = R[:, 0], R[:, 2]
            return pos[0] - fwd * 4.0 * r + up * 1.5 * r, pos[0] + fwd * 2.0 * r, up
        if self.mode == "action":
            self.yaw += 0.15 * dt
            target, span, self.subject = action_focus(pos, radius, colliding, self.follow, self.subject)
            self.distance = framing_distance(span, self.fovy, self.aspect)
        else:
            target = pos[0]
        offset = self.distance * np.array([math.cos(self.pitch) * math.cos(self.yaw),
                                           math.cos(self.pitch) * math.sin(self.yaw), math.sin(self.pitch)])
        return target + offset, target, np.array([0.0, 0.0, 1.0])

    def view(self) -> np.ndarray:
        return look_at(self.eye, self.target, self.up)

    def projection(self, aspect: float) -> np.ndarray:
        return perspective(self.fovy, aspect, 0.5, self.far)


def framing_distance(span: float, fovy_deg: float, aspect: float, margin: float = 1.3) -> float:
    """Distance [m] from which a sphere of diameter `span` [m] fills 1/margin of the narrower
    of the view's two angles."""
    half = math.atan(math.tan(math.radians(fovy_deg) / 2) * min(1.0, aspect))
    return margin * span / 2 / math.sin(half)


def action_focus(pos: np.ndarray, radius: np.ndarray, colliding: np.ndarray | None = None,
                 follow: tuple[int, int] | None = None, current: tuple[int, int] | None = None):
    """Midpoint, span [m] (diameter of a sphere holding both bounding spheres) and the pair
    (i, j) the action camera looks at: `follow` if given, else a colliding pair ((k, 2) ship
    indices; `current` if it is one of them), else the pair closest to touching (smallest gap
    between bounding spheres), or `current` while its gap is within 20% + 2 m of that one: the
    camera does not swing between pairs at nearly the same distance. Brute force over pairs,
    fine for the few ships of a demo."""
    n = len(pos)
    if n < 2:
        return pos[0].copy(), float(radius[0]) * 4, (0, 0)
    if follow is not None and max(follow) < n:
        i, j = follow
    elif colliding is not None and len(colliding):
        hits = [tuple(int(x) for x in pair) for pair in colliding]
        i, j = current if current in hits else hits[0]
    else:
        d = np.linalg.norm(pos[:, None] - pos[None], axis=2) - radius[:, None] - radius[None]
        d[np.diag_indices(n)] = np.inf
        i, j = (int(x) for x in np.unravel_index(np.argmin(d), d.shape))
        if current is not None and max(current) < n and d[current] <= 1.2 * d[i, j] + 2.0:
            i, j = current
    span = float(np.linalg.norm(pos[i] - pos[j]) + radius[i] + radius[j])
    return (pos[i] + pos[j]) / 2, span, (i, j)
