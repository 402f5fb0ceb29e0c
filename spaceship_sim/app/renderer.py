"""moderngl renderer (GL 3.3 core): starfield, instanced lit ships, sphere-tree levels,
colliding spheres and triangles, broad-phase bounds.

Ship meshes are uploaded once per model and drawn instanced (one draw call per model);
sphere-tree nodes and bounds are instanced unit spheres / rings. Imports moderngl, so only
the app commands import this module.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import moderngl
import numpy as np

from ..state import quat_to_matrix
from . import geometry
from .geometry import hit_geometry, level_spheres
from .camera import gl_bytes

BACKGROUND = (0.02, 0.02, 0.05)
USER_COLOR = (0.35, 0.75, 1.0)
MODEL_COLORS = [(0.80, 0.80, 0.78), (0.85, 0.65, 0.35), (0.55, 0.80, 0.50), (0.75, 0.55, 0.85)]
HIT_SHIP_COLOR = (1.0, 0.35, 0.25)
TREE_COLOR = (0.3, 0.8, 1.0, 0.18)
HIT_SPHERE_COLOR = (1.0, 0.2, 0.1, 0.45)
HIT_TRIANGLE_COLOR = (1.0, 1.0, 0.1)
BOUND_COLOR = (0.4, 0.4, 0.5, 0.5)
CANDIDATE_BOUND_COLOR = (1.0, 0.85, 0.2, 0.9)

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
# Flat shading from screen-space derivatives of the world position: vertices stay shared
# (indexed drawing, ~6x fewer vertex-shader runs than un-shared flat-shaded triangles,
# which matters under software GL).
SHIP_FS = """
#version 330
uniform vec3 light_dir;
in vec3 v_world; in vec3 v_color;
out vec4 f_color;
void main() {
    vec3 n = normalize(cross(dFdx(v_world), dFdy(v_world)));
    float diffuse = max(dot(n, light_dir), 0.0);
    float fill = 0.25 * max(dot(n, -light_dir), 0.0);   // dim back light keeps shadows readable
    f_color = vec4(v_color * (0.22 + 0.78 * diffuse + fill), 1.0);
}"""
# instanced unit sphere / rings: per instance centre, radius, rgba
BLOB_VS = """
#version 330
uniform mat4 view_proj;
in vec3 in_pos; in vec4 in_sphere; in vec4 in_rgba;
out vec3 v_normal; out vec4 v_rgba;
void main() {
    v_normal = in_pos; v_rgba = in_rgba;
    gl_Position = view_proj * vec4(in_sphere.xyz + in_sphere.w * in_pos, 1.0);
}"""
BLOB_FS = """
#version 330
uniform vec3 light_dir;
uniform float shade;
in vec3 v_normal; in vec4 v_rgba;
out vec4 f_color;
void main() {
    float d = max(dot(normalize(v_normal), light_dir), 0.0);
    f_color = vec4(v_rgba.rgb * mix(1.0, 0.45 + 0.55 * d, shade), v_rgba.a);
}"""
STAR_VS = """
#version 330
uniform mat4 rot_proj;   // projection * rotation part of the view: stars sit at infinity
in vec4 in_star;
out float v_bright;
void main() {
    v_bright = in_star.w;
    vec4 p = rot_proj * vec4(in_star.xyz, 0.0);
    gl_Position = p.xyww;            // on the far plane
    gl_PointSize = 1.0 + 1.5 * in_star.w;
}"""
STAR_FS = """
#version 330
in float v_bright;
out vec4 f_color;
void main() { f_color = vec4(vec3(v_bright), 1.0); }"""
FLAT_VS = """
#version 330
uniform mat4 view_proj;
in vec3 in_pos;
void main() { gl_Position = view_proj * vec4(in_pos, 1.0); }"""
FLAT_FS = """
#version 330
uniform vec3 color;
out vec4 f_color;
void main() { f_color = vec4(color, 1.0); }"""


@dataclass
class SceneOptions:
    """What to draw besides ships and stars (the overlay's controls change these)."""
    tree_level: int | None = None   # sphere-tree level drawn for every ship (None: none)
    show_hits: bool = True          # colliding spheres / triangles of the current frame
    show_bounds: bool = False       # broad-phase bounding spheres (candidates highlighted)


class Renderer:
    """Owns the GL objects; `render(...)` draws one frame into the bound framebuffer."""

    def __init__(self, ctx: moderngl.Context, models, trees):
        """models: list[Mesh]; trees: list[SphereTree] (same order)."""
        self.ctx, self.models, self.trees = ctx, models, trees
        self.light = np.array([0.5, 0.3, 0.8]) / np.linalg.norm([0.5, 0.3, 0.8])
        self.ship_prog = ctx.program(vertex_shader=SHIP_VS, fragment_shader=SHIP_FS)
        self.blob_prog = ctx.program(vertex_shader=BLOB_VS, fragment_shader=BLOB_FS)
        self.star_prog = ctx.program(vertex_shader=STAR_VS, fragment_shader=STAR_FS)
        self.flat_prog = ctx.program(vertex_shader=FLAT_VS, fragment_shader=FLAT_FS)
        self.ship_meshes = [self._ship_vao(m) for m in models]
        sphere_v, sphere_f = geometry.icosphere(1)
        self.sphere = self._instanced(self.blob_prog, sphere_v[sphere_f].reshape(-1, 3).astype("f4"),
                                      "4f 4f/i", ["in_sphere", "in_rgba"])
        self.ring = self._instanced(self.blob_prog, geometry.rings(), "4f 4f/i", ["in_sphere", "in_rgba"])
        stars = geometry.starfield()
        self.stars = (ctx.vertex_array(self.star_prog, [(ctx.buffer(stars), "4f", "in_star")]), len(stars))
        self.tri_buf = ctx.buffer(reserve=1 << 16, dynamic=True)
        self.tri_vao = ctx.vertex_array(self.flat_prog, [(self.tri_buf, "3f", "in_pos")])

    # --- setup -------------------------------------------------------------------------
    def _ship_vao(self, mesh):
        """Shared vertices + index buffer, drawn instanced with per-ship matrix and colour."""
        ibo = self.ctx.buffer(np.ascontiguousarray(mesh.faces, "i4"))
        return self._instanced(self.ship_prog, np.asarray(mesh.vertices, "f4"), "4f 4f 4f 4f 3f/i",
                               ["m0", "m1", "m2", "m3", "in_color"], index_buffer=ibo,
                               n_vertices=3 * len(mesh.faces))

    def _instanced(self, prog, vertices: np.ndarray, inst_format: str, inst_attrs: list[str],
                   index_buffer=None, n_vertices: int | None = None):
        """A vertex array over static `vertices` (in_pos) plus a growable per-instance buffer."""
        vbo = self.ctx.buffer(np.ascontiguousarray(vertices, "f4"))
        return _Instanced(self.ctx, prog, vbo, index_buffer, n_vertices or len(vertices), inst_format, inst_attrs)

    # --- per frame -----------------------------------------------------------------------
    def render(self, fbo, size, state, camera, narrow=None, options: SceneOptions | None = None) -> np.ndarray:
        """Draw the scene for `state` (ShipState) seen by `camera` into `fbo` of `size`
        (width, height) pixels; returns the (4, 4) view-projection matrix used."""
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
        for prog in (self.ship_prog, self.blob_prog, self.flat_prog):
            prog["view_proj"].write(gl_bytes(view_proj))
        self.ship_prog["light_dir"].value = tuple(self.light)
        self.blob_prog["light_dir"].value = tuple(self.light)
        R = quat_to_matrix(state.quat)
        self._draw_ships(state, R, narrow, camera.eye, geometry.in_frustum(state.pos, state.radius, view_proj))
        self._draw_overlays(state, R, narrow, options)
        return view_proj

    def _draw_ships(self, state, R, narrow, eye, visible) -> None:
        model = np.zeros((state.n, 4, 4), np.float32)
        model[:, :3, :3], model[:, :3, 3], model[:, 3, 3] = R, state.pos, 1.0
        color = np.array(MODEL_COLORS, np.float32)[state.model_id % len(MODEL_COLORS)]
        color[0] = USER_COLOR
        if narrow is not None and len(narrow.pairs):
            color[np.unique(narrow.pairs[np.asarray(narrow.colliding)])] = HIT_SHIP_COLOR
        # column-major matrices per instance: transpose each ship's matrix before flattening
        inst = np.concatenate([model.transpose(0, 2, 1).reshape(-1, 16), color], 1)
        # front to back (by model's nearest ship, then within a model): early depth test
        # rejects hidden fragments, which is most of the fill cost under software GL
        order = np.argsort(np.linalg.norm(state.pos - eye, axis=1))
        order = order[visible[order]]  # off-screen ships cost vertex work: skip them
        models = dict.fromkeys(state.model_id[order].tolist())
        for m in models:
            self.ship_meshes[m].render(inst[order[state.model_id[order] == m]])

    def _draw_overlays(self, state, R, narrow, options: SceneOptions) -> None:
        ctx = self.ctx
        hits = hit_geometry(state, R, self.trees, self.models, narrow) if options.show_hits else None
        if hits is not None and len(hits[1]):  # colliding triangles, visible through everything
            ctx.disable(moderngl.DEPTH_TEST | moderngl.CULL_FACE)
            self._draw_triangles(hits[1])
        # back faces culled: translucent spheres cost half the fill (software GL is fill-bound)
        ctx.enable_only(moderngl.DEPTH_TEST | moderngl.BLEND | moderngl.CULL_FACE)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.depth_mask = False  # translucent: test against ships, do not occlude each other
        self.blob_prog["shade"].value = 1.0
        if options.tree_level is not None:
            spheres = level_spheres(state, R, self.trees, options.tree_level)
            self.sphere.render(np.c_[spheres, np.tile(TREE_COLOR, (len(spheres), 1))])
        if hits is not None and len(hits[0]):
            self.sphere.render(np.c_[hits[0], np.tile(HIT_SPHERE_COLOR, (len(hits[0]), 1))])
        if options.show_bounds:
            self.blob_prog["shade"].value = 0.0
            ctx.disable(moderngl.CULL_FACE)
            rgba = np.tile(np.array(BOUND_COLOR, np.float32), (state.n, 1))
            if narrow is not None and len(narrow.pairs):
                rgba[np.unique(narrow.pairs)] = CANDIDATE_BOUND_COLOR
            self.ring.render(np.c_[state.pos, state.radius, rgba], mode=moderngl.LINES)
        ctx.depth_mask = True

    def _draw_triangles(self, tris: np.ndarray) -> None:
        data = np.ascontiguousarray(tris, "f4")
        if data.nbytes > self.tri_buf.size:
            self.tri_buf.orphan(2 * data.nbytes)
        self.tri_buf.write(data)
        self.flat_prog["color"].value = HIT_TRIANGLE_COLOR
        self.tri_vao.render(moderngl.TRIANGLES, vertices=len(data))


class _Instanced:
    """A static mesh (optionally indexed) drawn once per row of a per-instance buffer that
    grows on demand."""

    def __init__(self, ctx, prog, vbo, ibo, n_vertices, inst_format, inst_attrs):
        self.ctx, self.prog, self.vbo, self.ibo, self.n_vertices = ctx, prog, vbo, ibo, n_vertices
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
        self.vao = self.ctx.vertex_array(self.prog, [(self.vbo, "3f", "in_pos"),
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
