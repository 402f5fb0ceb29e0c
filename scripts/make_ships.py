#!/usr/bin/env python3
"""Generate the ship models in assets/ (deterministic; the outputs are committed).

    python scripts/make_ships.py [--out DIR] [--only NAME ...]

Each ship is built from manifold3d primitives with exact booleans, so the result is a closed,
watertight, consistently (outward) oriented 2-manifold. The mesh is then moved so that the body
origin is the centre of its minimal bounding sphere, scaled so that sphere has the target radius,
and written as binary little-endian PLY (float32 vertices, int32 faces). The body frame is x forward
(the nose / thrust axis), y to port (left), z up; units are metres.

Models:
  lamp       600-1,000 triangles, radius 4 m: Hubbard's test shape, a desk lamp flying shade-first
             (a thick-walled shade cup around a bulb, a jointed arm, a hollow base dish) - several
             deep concavities.
  fighter    1-3k triangles, radius 8 m: pointed fuselage along +x, swept wings, twin fins, hollow
             engine nozzles, cockpit canopy, wingtip cannons.
  freighter  5-10k triangles, radius 40 m: a spine carrying twelve cargo pods on struts, a command
             block with a hangar bay cut into its belly, an engine block with hollow nozzles, a dish.

`build(name)` returns (vertices float64 (n,3), faces int32 (m,3)) already centred and scaled;
`main()` writes the files and prints a summary. Tests import this module to check determinism.
"""
from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path

import manifold3d as mf
import numpy as np

M = mf.Manifold
REPO = Path(__file__).resolve().parent.parent

# target bounding radius [m] and allowed triangle range per model
SPECS = {
    "lamp": dict(radius=4.0, tris=(600, 1000)),
    "fighter": dict(radius=8.0, tris=(1000, 3000)),
    "freighter": dict(radius=40.0, tris=(5000, 10000)),
}


# ---------------------------------------------------------------- primitive helpers

def cylinder_x(length: float, r0: float, r1: float | None = None, segments: int = 16) -> M:
    """Cylinder/cone along +x starting at x=0 (radius r0 at x=0, r1 at x=length)."""
    r1 = r0 if r1 is None else r1
    # rotate about y by +90 deg maps +z to +x
    return M.cylinder(length, r0, r1, segments).rotate((0.0, 90.0, 0.0))


def capsule(p: tuple, q: tuple, r: float, segments: int = 12) -> M:
    """Convex hull of two spheres of radius r centred at p and q (a rod with rounded ends)."""
    s = M.sphere(r, segments)
    return M.batch_hull([s.translate(p), s.translate(q)])


def box(lo: tuple, hi: tuple) -> M:
    """Axis-aligned box between corners lo and hi."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    return M.cube(tuple(hi - lo)).translate(tuple(lo))


def slab_xy(points: list, z0: float, thickness: float) -> M:
    """Planar polygon (x, y) extruded along +z from z0 (wings)."""
    return M.extrude(mf.CrossSection([np.asarray(points, float)]), thickness).translate((0, 0, z0))


def slab_xz(points: list, y0: float, thickness: float) -> M:
    """Planar polygon given in (x, z) extruded along +y from y0 (fins)."""
    # extrude along +z then rotate +90 deg about x: (x, y, z) -> (x, -z, y), so the profile's
    # second coordinate becomes z and the extrusion runs along -y; shift to start at y0.
    return slab_xy(points, 0.0, thickness).rotate((90.0, 0.0, 0.0)).translate((0, y0 + thickness, 0))


def hollow_nozzle(length: float, r_out: float, wall: float, segments: int) -> M:
    """Bell nozzle along -x from x=0: a cone shell open at the back (a deep concavity)."""
    outer = cylinder_x(length, r_out * 0.7, r_out, segments)
    inner = cylinder_x(length + 0.02 * length, r_out * 0.7 - wall, r_out - wall, segments).translate(
        (wall, 0, 0))
    return (outer - inner).mirror((1.0, 0.0, 0.0))


# ---------------------------------------------------------------- the ships

def lamp() -> M:
    """Desk lamp: base dish at the back-bottom, two-segment arm, shade opening towards +x."""
    seg = 32
    # base: a thick disc with a dish hollowed into its top (concavity), lying in the y-z plane
    # at the back so the lamp "stands" on it with +x up its arm.
    base = M.cylinder(0.5, 1.6, 1.6, seg) - M.cylinder(0.4, 1.1, 1.3, seg).translate((0, 0, 0.2))
    base = base.rotate((0.0, 90.0, 0.0)).translate((-3.0, 0, 0))
    # arm: lower and upper rods meeting at an elbow joint, offset in z so the lamp is bent
    elbow, wrist = (-1.0, 0.0, 1.6), (1.0, 0.0, 0.4)
    arm = (capsule((-2.9, 0.0, 0.0), elbow, 0.18, 8) + capsule(elbow, wrist, 0.18, 8)
           + M.sphere(0.35, 12).translate(elbow))
    # shade: a thick-walled cup (outer cone minus inner cone), open towards +x
    outer = cylinder_x(2.4, 0.7, 1.9, seg)
    inner = cylinder_x(2.5, 0.45, 1.65, seg).translate((0.3, 0, 0))
    shade = (outer - inner).translate((0.6, 0, 0.4))
    # bulb inside the cup: leaves a deep annular gap between bulb and wall
    bulb = M.sphere(0.55, 12).translate((1.3, 0, 0.4))
    return base + arm + shade + bulb


def fighter() -> M:
    """Fighter: nose at +x, swept wings, twin canted fins, two hollow engine nozzles."""
    seg = 28
    body = M.batch_hull([
        M.sphere(1.0, seg).scale((2.0, 1.1, 0.8)).translate((-3.5, 0, 0)),
        M.sphere(0.8, seg).scale((1.5, 1.0, 0.7)).translate((2.5, 0, 0)),
        M.sphere(0.12, 8).translate((8.0, 0, 0)),  # nose tip
    ])
    canopy = M.sphere(1.0, seg).scale((1.8, 0.6, 0.55)).translate((2.2, 0, 0.55))
    wing_profile = [(1.5, 0.0), (-3.5, 7.0), (-5.0, 7.0), (-4.5, 0.0)]
    wings = slab_xy(wing_profile, -0.15, 0.3)
    wings = wings + wings.mirror((0.0, 1.0, 0.0))
    fin = slab_xz([(-3.0, 0.0), (-5.8, 3.0), (-6.6, 3.0), (-6.2, 0.0)], -0.1, 0.2)
    fin = fin.rotate((-15.0, 0.0, 0.0)).translate((0, 1.1, 0.3))
    fins = fin + fin.mirror((0.0, 1.0, 0.0))
    nozzle = hollow_nozzle(1.6, 0.75, 0.12, seg).translate((-5.2, 0.9, 0))
    nozzles = nozzle + nozzle.mirror((0.0, 1.0, 0.0))
    cannon = cylinder_x(4.5, 0.15, 0.1, 8).translate((-3.8, 7.0, 0.0))
    pods = cannon + cannon.mirror((0.0, 1.0, 0.0))
    return body + canopy + wings + fins + nozzles + pods


def freighter() -> M:
    """Freighter: spine with twelve cargo pods, command block with hangar bay, engine block."""
    seg = 28
    spine = box((-30.0, -2.0, -2.0), (30.0, 2.0, 2.0))
    parts = [spine]
    # cargo pods: 3 stations along the spine x 4 around it; struts tie each pod to the spine
    for x in (-18.0, -2.0, 14.0):
        for k in range(4):
            ang = 90.0 * k + 45.0
            pod = cylinder_x(12.0, 3.5, 3.5, seg).translate((x - 6.0, 0.0, 7.0))
            cap = M.sphere(3.5, seg).scale((0.4, 1.0, 1.0))
            pod = pod + cap.translate((x - 6.0, 0, 7.0)) + cap.translate((x + 6.0, 0, 7.0))
            strut = box((x - 1.0, -0.6, 1.5), (x + 1.0, 0.6, 4.0))
            parts.append((pod + strut).rotate((ang, 0.0, 0.0)))
    # command block at the front with a hangar bay cut up into its belly (open below and forward)
    block = box((28.0, -8.0, -6.0), (44.0, 8.0, 6.0))
    bridge = box((34.0, -4.0, 6.0), (42.0, 4.0, 9.0))
    hangar = box((31.0, -5.5, -6.5), (44.5, 5.5, 2.5))
    parts.append(block + bridge - hangar)
    # engine block at the back with four hollow nozzles
    parts.append(cylinder_x(10.0, 7.0, 6.0, 32).translate((-38.0, 0, 0)))
    for y, z in ((-3.6, -3.6), (-3.6, 3.6), (3.6, -3.6), (3.6, 3.6)):
        parts.append(hollow_nozzle(5.0, 2.6, 0.4, seg).translate((-37.8, y, z)))
    # sensor dish on a mast above the command block: a spherical cap shell (concave face forward)
    shell = M.sphere(5.0, 32) - M.sphere(4.6, 32).translate((0.3, 0, 0))
    dish = shell.trim_by_plane((1.0, 0.0, 0.0), 3.0).translate((34.0, 0, 18.5))
    mast = capsule((38.0, 0, 8.0), (37.3, 0, 16.0), 0.6, 8)
    parts += [dish, mast]
    return M.batch_boolean(parts, mf.OpType.Add)


BUILDERS = {"lamp": lamp, "fighter": fighter, "freighter": freighter}


# ---------------------------------------------------------------- centring and export

def minimal_sphere(points: np.ndarray) -> tuple[np.ndarray, float]:
    """Minimal bounding sphere of (n, 3) points, Welzl's algorithm on the convex hull vertices.

    Deterministic: the points are visited in a fixed (seeded) permutation. Returns (centre (3,), radius).
    """
    from scipy.spatial import ConvexHull, QhullError

    try:  # only hull vertices can support the sphere; the hull fails for flat input, then use all
        pts = points[ConvexHull(points).vertices]
    except QhullError:
        pts = np.asarray(points, float)
    pts = pts[np.random.default_rng(0).permutation(len(pts))]
    centre, r2 = _welzl(pts)
    return centre, float(np.sqrt(r2))


def _sphere_through(support: list) -> tuple[np.ndarray, float]:
    """Smallest sphere with all of 1..4 support points on its boundary."""
    p0 = support[0]
    if len(support) == 1:
        return p0.copy(), 0.0
    a = np.array([p - p0 for p in support[1:]])  # (k, 3)
    # centre = p0 + a^T lam, with |c - p0|^2 = |c - pi|^2  ->  (a a^T) lam = |a_i|^2 / 2
    lam = np.linalg.lstsq(a @ a.T, 0.5 * np.einsum("ij,ij->i", a, a), rcond=None)[0]
    c = p0 + a.T @ lam
    return c, float(np.sum((c - p0) ** 2))


def _welzl(pts: np.ndarray) -> tuple[np.ndarray, float]:
    """Welzl's algorithm unrolled into nested loops (one per support point), O(n) expected.

    Returns (centre (3,), squared radius) of the smallest sphere containing every row of pts.
    """
    eps = 1e-9

    def inside(c, r2, p):
        return np.sum((p - c) ** 2) <= r2 * (1 + eps) + eps

    c, r2 = _sphere_through([pts[0]])
    for i in range(1, len(pts)):
        if inside(c, r2, pts[i]):
            continue
        c, r2 = _sphere_through([pts[i]])
        for j in range(i):
            if inside(c, r2, pts[j]):
                continue
            c, r2 = _sphere_through([pts[i], pts[j]])
            for k in range(j):
                if inside(c, r2, pts[k]):
                    continue
                c, r2 = _sphere_through([pts[i], pts[j], pts[k]])
                for m in range(k):
                    if inside(c, r2, pts[m]):
                        continue
                    c, r2 = _sphere_through([pts[i], pts[j], pts[k], pts[m]])
    return c, r2


def build(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Build one model: (vertices (n,3) float64 body frame [m], faces (m,3) int32, outward CCW).

    Vertices are rounded to float32 (what the PLY file stores) so that the returned arrays equal
    what `load_mesh` reads back.
    """
    solid = BUILDERS[name]()
    if solid.status() != mf.Error.NoError or solid.is_empty():
        raise RuntimeError(f"{name}: manifold construction failed: {solid.status()}")
    mesh = solid.to_mesh64()
    verts = np.asarray(mesh.vert_properties, dtype=np.float64)[:, :3]
    faces = np.asarray(mesh.tri_verts, dtype=np.int32)
    centre, radius = minimal_sphere(verts)
    verts = (verts - centre) * (SPECS[name]["radius"] / radius)
    return verts.astype(np.float32).astype(np.float64), faces


def write_ply(path: Path, vertices: np.ndarray, faces: np.ndarray) -> None:
    """Binary little-endian PLY with float32 x,y,z and uchar-counted int32 triangle lists."""
    header = (
        "ply\nformat binary_little_endian 1.0\ncomment spaceship_sim scripts/make_ships.py\n"
        f"comment manifold3d {version('manifold3d')}\n"
        f"element vertex {len(vertices)}\nproperty float x\nproperty float y\nproperty float z\n"
        f"element face {len(faces)}\nproperty list uchar int vertex_indices\nend_header\n"
    )
    face_rec = np.zeros(len(faces), dtype=[("n", "u1"), ("idx", "<i4", (3,))])
    face_rec["n"], face_rec["idx"] = 3, faces
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "wb") as fh:
        fh.write(header.encode("ascii"))
        fh.write(np.ascontiguousarray(vertices, dtype="<f4").tobytes())
        fh.write(face_rec.tobytes())
    tmp.replace(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "assets", help="output folder (default: assets/)")
    ap.add_argument("--only", choices=sorted(BUILDERS), action="append", help="build only these models")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    sys.path.insert(0, str(REPO))  # so the script works without the package installed
    from spaceship_sim.meshes import load_mesh

    ok = True
    print(f"{'model':10s} {'tris':>6s} {'verts':>6s} {'closed':>6s} {'radius_m':>9s} {'volume_m3':>10s}  range")
    for name in args.only or list(BUILDERS):
        verts, faces = build(name)
        path = args.out / f"{name}.ply"
        write_ply(path, verts, faces)
        mesh = load_mesh(path)  # the project's own validation (closed, non-degenerate, finite)
        lo, hi = SPECS[name]["tris"]
        in_range = lo <= len(faces) <= hi
        ok &= in_range and mesh.closed
        print(f"{name:10s} {len(faces):6d} {len(verts):6d} {str(mesh.closed):>6s} "
              f"{mesh.bounding_radius:9.3f} {mesh.volume:10.1f}  {lo}-{hi} {'ok' if in_range else 'OUT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
