"""moderngl renderer (GL 3.3 core): starfield, instanced lit ships, sphere-tree levels,
colliding spheres and triangles, separation-bound segments, broad-phase bounds.

Ship meshes are uploaded once per model and drawn instanced (one draw call per model);
sphere-tree nodes are instanced ray-cast sphere impostors, bounds instanced rings. Imports moderngl, so only
the app commands import this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import moderngl
import numpy as np

from ..state import quat_to_matrix
from . import geometry
from .geometry import hit_geometry, level_color, level_spheres
from .camera import gl_bytes

BACKGROUND = (0.02, 0.02, 0.05)
USER_COLOR = (0.35, 0.65, 1.0)
# muted per-model hull colours (steel, sand, sage, lavender): the saturated level colours of
# colliding spheres stand out against every one of them
MODEL_COLORS = [(0.72, 0.74, 0.78), (0.80, 0.68, 0.50), (0.55, 0.70, 0.58), (0.68, 0.62, 0.80)]
HIT_SHIP_TINT = (1.0, 0.7, 0.65)  # colliding ships: model colour times this (a warm hint; the spheres tell the rest)
TREE_ALPHA = 0.22                 # spheres of the tree level drawn
HIT_SPHERE_ALPHA = 0.5            # colliding spheres (seen through the hulls)
SEGMENT_COLOR = (1.0, 1.0, 1.0)
BOUND_COLOR = (0.4, 0.4, 0.5, 0.5)
CANDIDATE_BOUND_COLOR = (1.0, 0.85, 0.2, 0.9)
COARSE_BELOW_PX = 12.0  # bodies smaller than this on screen (bounding radius) use their coarse mesh if any

SHIP_VS = """
#version 330
uniform mat4 view_proj;
in vec3 in_pos;
in vec4 m0; in vec4 m1; in vec4 m2; in vec4 m3; in vec3 in_color;
out vec3 v_world; out vec3 v_color;
void main() {
    vec4 world = mat4(m0, m1, m2, m3) * vec4(in_pos, 1.0);
    v_world = world.xyz;
    v_color = in_color;
    gl_Position = view_proj * world;
}"""
# Per-pixel key + fill + rim lighting on face normals from screen-space derivatives of the
# world position: vertices stay shared (indexed drawing, ~6x fewer vertex-shader runs than
# un-shared flat-shaded triangles, which matters under software GL). The lights move with the
# camera (key above-left of the viewer, fill below-right), so every view shows the faces
# inside a concavity in different shades; a sky term darkens faces looking down into pockets
# and the rim outlines the silhouette against dark space.
SHIP_FS = """
#version 330
uniform vec3 eye; uniform vec3 key_dir; uniform vec3 fill_dir; uniform vec3 sky_dir;
in vec3 v_world; in vec3 v_color;
out vec4 f_color;
void main() {
    vec3 n = normalize(cross(dFdx(v_world), dFdy(v_world)));
    vec3 v = normalize(eye - v_world);
    if (dot(n, v) < 0.0) n = -n;
    float key = max(dot(n, key_dir), 0.0);
    float fill = max(dot(n, fill_dir), 0.0);
    float sky = 0.5 + 0.5 * dot(n, sky_dir);
    float rim = pow(1.0 - max(dot(n, v), 0.0), 3.0);
    float spec = pow(max(dot(n, normalize(key_dir + v)), 0.0), 40.0);
    vec3 c = v_color * (0.08 + 0.17 * sky + 0.70 * key + 0.22 * fill) + 0.25 * spec + vec3(0.30, 0.40, 0.55) * rim;
    f_color = vec4(c, 1.0);
}"""
# Faceted convex bodies (asteroids: most of the pixels of a field): the same lights evaluated once
# per face in the vertex stage (each vertex carries its face's normal and centre; no vertex is
# shared), the fragment stage only writes a flat colour. Under software GL the per-pixel normal,
# view vector and lighting above are most of a body's cost; a convex hull's faces are flat, so
# per-face lighting looks the same (the rim term takes the view vector at the face centre). Matte:
# no specular highlight, as rock.
ROCK_VS = """
#version 330
uniform mat4 view_proj;
uniform vec3 eye; uniform vec3 key_dir; uniform vec3 fill_dir; uniform vec3 sky_dir;
in vec3 in_pos; in vec3 in_normal; in vec3 in_center;
in vec4 m0; in vec4 m1; in vec4 m2; in vec4 m3; in vec3 in_color;
flat out vec3 v_rgb;
void main() {
    mat4 model = mat4(m0, m1, m2, m3);
    vec3 n = normalize(mat3(model) * in_normal);
    vec3 v = normalize(eye - (model * vec4(in_center, 1.0)).xyz);
    float key = max(dot(n, key_dir), 0.0);
    float fill = max(dot(n, fill_dir), 0.0);
    float sky = 0.5 + 0.5 * dot(n, sky_dir);
    float rim = pow(1.0 - max(dot(n, v), 0.0), 3.0);
    v_rgb = in_color * (0.08 + 0.17 * sky + 0.70 * key + 0.22 * fill) + vec3(0.30, 0.40, 0.55) * rim;
    gl_Position = view_proj * model * vec4(in_pos, 1.0);
}"""
ROCK_FS = """
#version 330
flat in vec3 v_rgb;
out vec4 f_color;
void main() { f_color = vec4(v_rgb, 1.0); }"""
# Spheres as ray-cast impostors: one camera-facing quad per sphere covering its silhouette,
# the fragment shader intersects the view ray with the sphere (smooth at any size for four
# vertices; a tessellated sphere would cost thousands of vertices per sphere under software GL).
SPHERE_VS = """
#version 330
uniform mat4 view;
uniform mat4 proj;
in vec2 in_corner; in vec4 in_sphere; in vec4 in_rgba;
out vec3 v_ray; flat out vec4 v_center; flat out vec4 v_rgba;
void main() {
    vec3 c = (view * vec4(in_sphere.xyz, 1.0)).xyz;
    float r = in_sphere.w, d = length(c);
    v_center = vec4(c, r); v_rgba = in_rgba;
    if (d < 1.02 * r) { gl_Position = vec4(2.0, 2.0, 2.0, 1.0); return; }  // eye inside: skip
    vec3 n = c / d;
    vec3 u = normalize(abs(n.y) < 0.99 ? cross(n, vec3(0.0, 1.0, 0.0)) : cross(n, vec3(1.0, 0.0, 0.0)));
    vec3 w = cross(u, n);
    float s = r * d / sqrt(d * d - r * r);  // silhouette radius in the plane through c facing the eye
    v_ray = c + s * (in_corner.x * u + in_corner.y * w);
    gl_Position = proj * vec4(v_ray, 1.0);
}"""
SPHERE_FS = """
#version 330
uniform mat4 proj;
uniform vec3 key_view;   // key light direction in view space
in vec3 v_ray; flat in vec4 v_center; flat in vec4 v_rgba;
out vec4 f_color;
void main() {
    vec3 dir = normalize(v_ray), c = v_center.xyz;
    float b = dot(dir, c), disc = b * b - dot(c, c) + v_center.w * v_center.w;
    if (disc < 0.0) discard;
    vec3 hit = (b - sqrt(disc)) * dir;
    vec3 n = (hit - c) / v_center.w;
    float facing = max(dot(n, -dir), 0.0);
    float light = 0.55 + 0.45 * max(dot(n, key_view), 0.0);
    // glass look: more opaque towards the rim, so the hull inside stays visible
    float alpha = v_rgba.a * (0.6 + 0.8 * pow(1.0 - facing, 2.0));
    f_color = vec4(v_rgba.rgb * light + 0.3 * pow(1.0 - facing, 3.0), min(alpha, 1.0));
    vec4 clip = proj * vec4(hit, 1.0);
    gl_FragDepth = 0.5 + 0.5 * clip.z / clip.w;
}"""
# rings (broad-phase bounds): per instance centre, radius, rgba
RING_VS = """
#version 330
uniform mat4 view_proj;
in vec3 in_pos; in vec4 in_sphere; in vec4 in_rgba;
out vec4 v_rgba;
void main() {
    v_rgba = in_rgba;
    gl_Position = view_proj * vec4(in_sphere.xyz + in_sphere.w * in_pos, 1.0);
    gl_PointSize = 3.0;  // drawn as POINTS with radius 0: the ship markers
}"""
RING_FS = """
#version 330
in vec4 v_rgba;
out vec4 f_color;
void main() { f_color = v_rgba; }"""
STAR_VS = """
#version 330
uniform mat4 rot_proj;   // projection * rotation part of the view: stars sit at infinity
in vec4 in_star;
out float v_bright;
void main() {
    v_bright = in_star.w;
    vec4 p = rot_proj * vec4(in_star.xyz, 0.0);
    gl_Position = p.xyww;            // on the far plane
    gl_PointSize = in_star.w > 0.9 ? 2.0 : 1.0;
}"""
# dim, slightly blue, mostly single pixels: a distant ship (lit, drawn with a marker) is
# brighter and bigger than any star
STAR_FS = """
#version 330
in float v_bright;
out vec4 f_color;
void main() { f_color = vec4(vec3(0.75, 0.8, 1.0) * 0.55 * v_bright, 1.0); }"""
FLAT_VS = """
#version 330
uniform mat4 view_proj;
uniform float point_size;
in vec3 in_pos;
void main() { gl_Position = view_proj * vec4(in_pos, 1.0); gl_PointSize = point_size; }"""
FLAT_FS = """
#version 330
uniform vec4 color;
out vec4 f_color;
void main() { f_color = color; }"""


@dataclass
class SceneOptions:
    """What to draw besides ships and stars (the overlay's controls change these)."""
    tree_level: int | None = None   # sphere-tree level drawn for every ship (None: none)
    show_hits: bool = True          # colliding spheres / triangles of the current frame
    show_bounds: bool = False       # broad-phase bounding spheres (candidates highlighted)
    show_boxes: bool = False        # asteroids' sweep-and-prune boxes (app/asteroids.py)
    show_features: bool = False     # asteroid pairs' closest-feature segments


class Renderer:
    """Owns the GL objects; `render(...)` draws one frame into the bound framebuffer."""

    def __init__(self, ctx: moderngl.Context, models, trees, colors=None, coarse=None, faceted=None):
        """models: list[Mesh]; trees: list[SphereTree] (same order); colors: RGB per model
        (default: MODEL_COLORS in turn); coarse: per model a Mesh drawn instead when the body's
        bounding sphere is under COARSE_BELOW_PX pixels in radius, or None (default: none);
        faceted: per model whether it is a convex body lit per face (ROCK_VS; default: none is)."""
        self.ctx, self.models = ctx, models
        self.model_colors = np.array(colors or [MODEL_COLORS[m % len(MODEL_COLORS)] for m in range(len(models))],
                                     np.float32)
        self.set_trees(trees)
        self.ship_prog = ctx.program(vertex_shader=SHIP_VS, fragment_shader=SHIP_FS)
        self.sphere_prog = ctx.program(vertex_shader=SPHERE_VS, fragment_shader=SPHERE_FS)
        self.ring_prog = ctx.program(vertex_shader=RING_VS, fragment_shader=RING_FS)
        self.star_prog = ctx.program(vertex_shader=STAR_VS, fragment_shader=STAR_FS)
        self.flat_prog = ctx.program(vertex_shader=FLAT_VS, fragment_shader=FLAT_FS)
        self.rock_prog = ctx.program(vertex_shader=ROCK_VS, fragment_shader=ROCK_FS)
        faceted = faceted or [False] * len(models)
        self.ship_meshes = [self._mesh_vao(m, f) for m, f in zip(models, faceted)]
        self.coarse_meshes = [None if c is None else self._mesh_vao(c, f)
                              for c, f in zip(coarse or [None] * len(models), faceted)]
        corners = np.array([[-1, -1], [1, -1], [1, 1], [-1, -1], [1, 1], [-1, 1]], "f4")
        self.sphere = _Instanced(ctx, self.sphere_prog, ctx.buffer(corners), None, 6, "4f 4f/i",
                                 ["in_sphere", "in_rgba"], vertex_attr=("2f", "in_corner"))
        self.ring = self._instanced(self.ring_prog, geometry.rings(), "4f 4f/i", ["in_sphere", "in_rgba"])
        self.marker = self._instanced(self.ring_prog, np.zeros((1, 3), "f4"), "4f 4f/i", ["in_sphere", "in_rgba"])
        stars = geometry.starfield()
        self.stars = (ctx.vertex_array(self.star_prog, [(ctx.buffer(stars), "4f", "in_star")]), len(stars))
        self.line_buf = ctx.buffer(reserve=1 << 16, dynamic=True)
        self.line_vao = ctx.vertex_array(self.flat_prog, [(self.line_buf, "3f", "in_pos")])

    def set_trees(self, trees) -> None:
        """The sphere trees drawn from now on, one per model (same order as the models)."""
        self.trees = trees
        self.exact_level = max(t.depth for t in trees) + 1

    # --- setup -------------------------------------------------------------------------

    def _mesh_vao(self, mesh, faceted: bool = False):
        """Drawn instanced with per-body matrix and colour: shared vertices + index buffer (lit per
        pixel), or for a faceted body three vertices per triangle with its normal and centre."""
        inst = ("4f 4f 4f 4f 3f/i", ["m0", "m1", "m2", "m3", "in_color"])
        if not faceted:
            ibo = self.ctx.buffer(np.ascontiguousarray(mesh.faces, "i4"))
            return self._instanced(self.ship_prog, np.asarray(mesh.vertices, "f4"), *inst, index_buffer=ibo,
                                   n_vertices=3 * len(mesh.faces))
        vbo = self.ctx.buffer(geometry.faceted_vertices(mesh.vertices, mesh.faces))
        return _Instanced(self.ctx, self.rock_prog, vbo, None, 3 * len(mesh.faces), *inst,
                          vertex_attr=("3f 3f 3f", "in_pos", "in_normal", "in_center"))

    def _instanced(self, prog, vertices: np.ndarray, inst_format: str, inst_attrs: list[str],
                   index_buffer=None, n_vertices: int | None = None):
        """A vertex array over static `vertices` (in_pos) plus a growable per-instance buffer."""
        vbo = self.ctx.buffer(np.ascontiguousarray(vertices, "f4"))
        return _Instanced(self.ctx, prog, vbo, index_buffer, n_vertices or len(vertices), inst_format, inst_attrs)

    # --- per frame -----------------------------------------------------------------------
    def set_shapes(self, shapes) -> None:
        """Deforming models' current vertices: {model id: (nv, 3) body frame [m]} into their
        vertex buffers (faces unchanged; normals come from screen-space derivatives)."""
        for m, vertices in shapes.items():
            self.ship_meshes[m].vbo.write(np.ascontiguousarray(vertices, "f4"))

    def render(self, fbo, size, state, camera, narrow=None, options: SceneOptions | None = None, lines=()):
        """Draw the scene for `state` (ShipState) seen by `camera` into `fbo` of `size`
        (width, height) pixels; `lines`: [(GL_LINES world vertices (v, 3), rgba, end point size
        [px] (0: none), on_top: seen through the hulls (else depth-tested))] drawn over the ships. Returns the (4, 4) view-projection matrix used and the
        labels to print over the scene: [(world point (3,), text, rgb)]."""
        options = options or SceneOptions()
        ctx = self.ctx
        fbo.use()
        ctx.viewport = (0, 0, *size)
        ctx.scissor = None
        fbo.clear(*BACKGROUND, 1.0, viewport=(0, 0, *size))
        view, proj = camera.view(), camera.projection(size[0] / size[1])
        view_proj = proj @ view
        rot = view.copy()
        rot[:3, 3] = 0.0
        ctx.enable_only(moderngl.PROGRAM_POINT_SIZE)
        self.star_prog["rot_proj"].write(gl_bytes(proj @ rot))
        self.stars[0].render(moderngl.POINTS, vertices=self.stars[1])

        ctx.enable_only(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
        for prog in (self.ship_prog, self.rock_prog, self.ring_prog, self.flat_prog):
            prog["view_proj"].write(gl_bytes(view_proj))
        self._set_lights(view, camera.eye)
        self.sphere_prog["proj"].write(gl_bytes(proj))
        R = quat_to_matrix(state.quat)
        pixels = proj[1, 1] * size[1] / 2 * state.radius / np.maximum(np.linalg.norm(state.pos - camera.eye, axis=1), 1e-9)
        self._draw_ships(state, R, narrow, camera.eye, geometry.in_frustum(state.pos, state.radius, view_proj), pixels)
        ctx.enable_only(moderngl.DEPTH_TEST | moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        for vertices, rgba, point_size, on_top in lines:
            ctx.enable_only(moderngl.BLEND | moderngl.PROGRAM_POINT_SIZE | (0 if on_top else moderngl.DEPTH_TEST))
            self._draw_lines(vertices, rgba, moderngl.LINES)
            if point_size:
                self._draw_lines(vertices, rgba, moderngl.POINTS, point_size=point_size)
        return view_proj, self._draw_overlays(state, R, narrow, options)

    def _set_lights(self, view: np.ndarray, eye) -> None:
        """Key above-left of the viewer, fill below-right, sky: the camera's up (world frame)."""
        side, up, back = view[0, :3], view[1, :3], view[2, :3]  # camera axes in the world
        key = _unit(-0.5 * side + 0.6 * up + 0.65 * back)
        for prog in (self.ship_prog, self.rock_prog):
            prog["key_dir"].value = tuple(key)
            prog["fill_dir"].value = tuple(_unit(0.7 * side - 0.35 * up + 0.45 * back))
            prog["sky_dir"].value = tuple(up)
            prog["eye"].value = tuple(eye)
        self.sphere_prog["key_view"].value = tuple(view[:3, :3] @ key)
        self.sphere_prog["view"].write(gl_bytes(view))

    def _draw_ships(self, state, R, narrow, eye, visible, pixels) -> None:
        """pixels: (n,) on-screen radius of each body's bounding sphere [px] (picks coarse meshes)."""
        model = np.zeros((state.n, 4, 4), np.float32)
        model[:, :3, :3], model[:, :3, 3], model[:, 3, 3] = R, state.pos, 1.0
        color = self.model_colors[state.model_id]
        color[0] = USER_COLOR
        if narrow is not None and len(narrow.pairs):
            color[np.unique(narrow.pairs[np.asarray(narrow.colliding)])] *= HIT_SHIP_TINT
        # column-major matrices per instance: transpose each ship's matrix before flattening
        inst = np.concatenate([model.transpose(0, 2, 1).reshape(-1, 16), color], 1)
        # front to back (by model's nearest ship, then within a model): early depth test
        # rejects hidden fragments, which is most of the fill cost under software GL
        order = np.argsort(np.linalg.norm(state.pos - eye, axis=1))
        order = order[visible[order]]  # off-screen ships cost vertex work: skip them
        models = dict.fromkeys(state.model_id[order].tolist())
        for m in models:
            mine = order[state.model_id[order] == m]
            coarse = self.coarse_meshes[m]
            if coarse is None:
                self.ship_meshes[m].render(inst[mine])
                continue
            far = pixels[mine] < COARSE_BELOW_PX  # triangles cost most under software GL: fewer where unseen
            self.ship_meshes[m].render(inst[mine[~far]])
            coarse.render(inst[mine[far]])
        # a marker at every centre (hidden inside near hulls): far ships stay visible among stars
        self.ctx.enable(moderngl.PROGRAM_POINT_SIZE)
        self.marker.render(np.c_[state.pos[order], np.zeros(len(order)), color[order], np.ones(len(order))],
                           mode=moderngl.POINTS)

    def _draw_overlays(self, state, R, narrow, options: SceneOptions) -> list:
        ctx = self.ctx
        ctx.enable_only(moderngl.DEPTH_TEST | moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.depth_mask = False  # translucent: test against ships, do not occlude each other
        if options.tree_level is not None:
            spheres = level_spheres(state, R, self.trees, options.tree_level)
            rgba = (*level_color(options.tree_level, self.exact_level), TREE_ALPHA)
            self.sphere.render(np.c_[spheres, np.tile(rgba, (len(spheres), 1))])
        if options.show_bounds:
            rgba = np.tile(np.array(BOUND_COLOR, np.float32), (state.n, 1))
            if narrow is not None and len(narrow.pairs):
                rgba[np.unique(narrow.pairs)] = CANDIDATE_BOUND_COLOR
            self.ring.render(np.c_[state.pos, state.radius, rgba], mode=moderngl.LINES)
        hits = hit_geometry(state, R, self.trees, self.models, narrow) if options.show_hits else None
        labels = self._draw_hits(hits) if hits is not None else []
        ctx.depth_mask = True
        return labels

    def _draw_hits(self, hits) -> list:
        """Colliding spheres, triangles and bound segments, all seen through the hulls."""
        self.ctx.disable(moderngl.DEPTH_TEST)
        colors = {lv: level_color(lv, self.exact_level) for lv in set(hits.levels.tolist())}
        rgba = np.array([(*colors[lv], HIT_SPHERE_ALPHA) for lv in hits.levels.tolist()]).reshape(-1, 4)
        self.sphere.render(np.c_[hits.spheres, rgba])
        exact = level_color(self.exact_level, self.exact_level)
        self._draw_lines(hits.triangles, (*exact, 1.0), moderngl.TRIANGLES)
        self._draw_lines(hits.segments.reshape(-1, 3), (*SEGMENT_COLOR, 1.0), moderngl.LINES)
        self._draw_lines(hits.segments.reshape(-1, 3), (*SEGMENT_COLOR, 1.0), moderngl.POINTS, point_size=5.0)
        return [(point, text, level_color(level, self.exact_level)) for point, text, level in hits.labels]

    def _draw_lines(self, vertices: np.ndarray, rgba, mode, point_size: float = 1.0) -> None:
        """Plain geometry in one colour: triangles, segments or points (world vertices (v, 3))."""
        if len(vertices) == 0:
            return
        data = np.ascontiguousarray(vertices, "f4")
        if data.nbytes > self.line_buf.size:
            self.line_buf.orphan(2 * data.nbytes)
        self.line_buf.write(data)
        self.flat_prog["color"].value = tuple(rgba)
        self.flat_prog["point_size"].value = point_size
        self.line_vao.render(mode, vertices=len(data))


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


class _Instanced:
    """A static mesh (optionally indexed) drawn once per row of a per-instance buffer that
    grows on demand."""

    def __init__(self, ctx, prog, vbo, ibo, n_vertices, inst_format, inst_attrs, vertex_attr=("3f", "in_pos")):
        self.ctx, self.prog, self.vbo, self.ibo, self.n_vertices = ctx, prog, vbo, ibo, n_vertices
        self.vertex_attr = vertex_attr
        self.inst_format, self.inst_attrs = inst_format, inst_attrs
        self.row_bytes = 4 * sum(int(n) for n in re.findall(r"(\d+)f", inst_format))  # "4f 3f/i" -> 7 floats
        self.inst = self.vao = None
        self._allocate(256)

    def _allocate(self, rows: int) -> None:
        if self.inst is not None:
            self.inst.release()
            self.vao.release()
        self.inst = self.ctx.buffer(reserve=rows * self.row_bytes, dynamic=True)
        self.capacity = rows
        self.vao = self.ctx.vertex_array(self.prog, [(self.vbo, *self.vertex_attr),
                                                     (self.inst, self.inst_format, *self.inst_attrs)],
                                         index_buffer=self.ibo, index_element_size=4)

    def render(self, rows: np.ndarray, mode=moderngl.TRIANGLES) -> None:
        rows = np.ascontiguousarray(rows, "f4")
        if len(rows) == 0:
            return
        if len(rows) > self.capacity:
            self._allocate(2 * len(rows))
        self.inst.write(rows)
        self.vao.render(mode, vertices=self.n_vertices, instances=len(rows))
