"""ImGui + ImPlot overlay: draws an OverlayModel and edits a Controls object.

Panels sit at fixed places (top-left timing, top-right collisions, bottom-left controls,
bottom-right help) so screenshots are comparable. Imports imgui_bundle's pyglet backend,
which needs a GL context: only the app commands import this module.
"""
from __future__ import annotations

import ctypes
import math
from dataclasses import dataclass

import moderngl

import numpy as np
import OpenGL

# the backend issues ~100 GL calls a frame through PyOpenGL; a glGetError after each costs
# time, and a stale error flag (reading the default framebuffer sets one) would raise
OpenGL.ERROR_CHECKING = False
from imgui_bundle import imgui, implot  # noqa: E402
from imgui_bundle.python_backends import pyglet_backend  # noqa: E402

from .keys import HELP
from .overlay_model import SERIES, OverlayModel, panel_rects

BROADPHASES = ("space_time", "sweep_prune", "brute_force")
@dataclass
class Controls:
    """What the controls panel edits; the app applies changes to the world and renderer."""
    target_fps: float = 30.0
    min_level: int = 1
    max_level: int = 4
    level_limit: int = 4            # deepest level there is (slider range)
    broadphase: str = "space_time"
    tree_level: int = -1            # -1: no tree drawn
    show_hits: bool = True
    show_bounds: bool = False
    paused: bool = False
    step_requested: bool = False
    camera_mode: str = "chase"
    title: str = "fly"
    backgrounds: bool = False       # opaque panel backgrounds: readable, but costly fill under software GL


IMGUI_VS = """
#version 330
uniform mat4 ProjMtx;
in vec2 Position; in vec2 UV; in vec4 Color;
out vec2 Frag_UV; out vec4 Frag_Color;
void main() { Frag_UV = UV; Frag_Color = Color; gl_Position = ProjMtx * vec4(Position, 0.0, 1.0); }"""
IMGUI_FS = """
#version 330
uniform sampler2D Texture;
in vec2 Frag_UV; in vec4 Frag_Color;
out vec4 Out_Color;
void main() { Out_Color = Frag_Color * texture(Texture, Frag_UV); }"""


class ModernglImguiRenderer(pyglet_backend.PygletProgrammablePipelineRenderer):
    """imgui-bundle's pyglet backend (input, textures) drawing its lists through moderngl.

    The stock renderer issues every GL call through PyOpenGL and backs up and restores GL
    state around each frame: ~2 ms of Python a frame, a fifth of the frame budget here."""

    def __init__(self, window, ctx: moderngl.Context):
        super().__init__(window)
        self.ctx = ctx
        self.prog = ctx.program(vertex_shader=IMGUI_VS, fragment_shader=IMGUI_FS)
        self.vbo = ctx.buffer(reserve=1 << 18, dynamic=True)
        self.ibo = ctx.buffer(reserve=1 << 18, dynamic=True)
        self.vao = ctx.vertex_array(self.prog, [(self.vbo, "2f 2f 4f1", "Position", "UV", "Color")],
                                    index_buffer=self.ibo, index_element_size=imgui.INDEX_SIZE)
        self.textures: dict[int, moderngl.Texture] = {}

    def _texture(self, gl_id: int):
        if gl_id not in self.textures:  # textures are made by the base class (PyOpenGL)
            self.textures[gl_id] = self.ctx.external_texture(gl_id, (1, 1), 4, 0, "f1")
        return self.textures[gl_id]

    def render(self, draw_data) -> None:
        io, ctx = self.io, self.ctx
        w, h = io.display_size
        fb_w, fb_h = int(w * io.display_framebuffer_scale[0]), int(h * io.display_framebuffer_scale[1])
        self._update_textures()
        if fb_w == 0 or fb_h == 0:
            return
        draw_data.scale_clip_rects(io.display_framebuffer_scale)
        ctx.enable_only(moderngl.BLEND)
        ctx.blend_func = moderngl.SRC_ALPHA, moderngl.ONE_MINUS_SRC_ALPHA
        ctx.viewport = (0, 0, fb_w, fb_h)
        proj = np.array([[2 / w, 0, 0, 0], [0, -2 / h, 0, 0], [0, 0, -1, 0], [-1, 1, 0, 1]], "f4")
        self.prog["ProjMtx"].write(proj.tobytes())  # column-major ortho: pixels -> clip space
        for cl in draw_data.cmd_lists:
            vtx = ctypes.string_at(cl.vtx_buffer.data_address(), cl.vtx_buffer.size() * imgui.VERTEX_SIZE)
            idx = ctypes.string_at(cl.idx_buffer.data_address(), cl.idx_buffer.size() * imgui.INDEX_SIZE)
            for buf, data in ((self.vbo, vtx), (self.ibo, idx)):
                if len(data) > buf.size:
                    buf.orphan(2 * len(data))
                buf.write(data)
            for cmd in cl.cmd_buffer:
                self._texture(cmd.tex_ref.get_tex_id()).use(0)
                x0, y0, x1, y1 = cmd.clip_rect
                ctx.scissor = (int(x0), int(fb_h - y1), int(x1 - x0), int(y1 - y0))
                self.vao.render(moderngl.TRIANGLES, vertices=cmd.elem_count, first=cmd.idx_offset)
        ctx.scissor = None
        self._handle_mouse_cursor()


class Overlay:
    def __init__(self, window, ctx: moderngl.Context):
        imgui.create_context()
        implot.create_context()
        imgui.get_io().set_ini_filename(None)
        imgui.style_colors_dark()
        self.impl = ModernglImguiRenderer(window, ctx)
        self.width, self.height = window.get_size()
        self.backgrounds = None

    def wants_keyboard(self) -> bool:
        return imgui.get_io().want_capture_keyboard

    def wants_mouse(self) -> bool:
        return imgui.get_io().want_capture_mouse

    def draw(self, model: OverlayModel, controls: Controls) -> None:
        """Build and render one ImGui frame into the current framebuffer."""
        self.impl.process_inputs()
        self._set_backgrounds(controls.backgrounds)
        imgui.new_frame()
        self._timing(model)
        self._collisions(model)
        self._controls(controls)
        self._help(controls)
        imgui.render()
        self.impl.render(imgui.get_draw_data())

    def _set_backgrounds(self, on: bool) -> None:
        """Panel and plot backgrounds on or off. Off by default: a blended 1000x600 panel
        costs several ms under llvmpipe, while text and lines over dark space stay readable."""
        if on == self.backgrounds:
            return
        self.backgrounds = on
        clear = imgui.ImVec4(0, 0, 0, 0)
        for col in (implot.Col_.frame_bg, implot.Col_.plot_bg, implot.Col_.legend_bg):
            implot.get_style().set_color_(col, implot.AUTO_COL if on else clear)  # AUTO_COL: theme colour

    def _begin(self, name: str) -> None:
        x, y, w, h = panel_rects(self.width, self.height)[name]
        imgui.set_next_window_pos(imgui.ImVec2(x, y), imgui.Cond_.once)
        imgui.set_next_window_size(imgui.ImVec2(w, h), imgui.Cond_.once)
        imgui.set_next_window_bg_alpha(0.8)
        imgui.begin(name, None, 0 if self.backgrounds else imgui.WindowFlags_.no_background)

    def _timing(self, m: OverlayModel) -> None:
        self._begin("Frame timing")
        if m.status:
            imgui.text_colored(imgui.ImVec4(1.0, 0.8, 0.2, 1.0), m.status)
        imgui.text(f"frame {m.frame}   target {m.target_ms:.1f} ms" + ("   OVERRUN" if m.overrun else ""))
        imgui.text(f"render: predicted {m.render_predicted_ms:.2f} ms, actual {m.render_actual_ms:.2f} ms")
        imgui.text(f"detection: budget {m.budget_ms:.2f} ms, used {m.detection_used_ms:.2f} ms")
        frames, series = m.arrays()
        if implot.begin_plot("##frame times", imgui.ImVec2(-1, -1)):
            implot.setup_axes("frame", "ms", implot.AxisFlags_.auto_fit, 0)
            implot.setup_legend(implot.Location_.north, implot.LegendFlags_.horizontal)
            if math.isfinite(m.target_ms):  # fixed range: start-up spikes (numba compile) would squash the plot
                implot.setup_axis_limits(implot.ImAxis_.y1, -m.target_ms, 2.5 * m.target_ms, implot.Cond_.always)
            if len(frames):
                for name in SERIES:
                    implot.plot_line(name, frames, series[name])
                if math.isfinite(m.target_ms):
                    implot.plot_inf_lines("target", np.array([m.target_ms]),
                                          implot.Spec(flags=implot.InfLinesFlags_.horizontal))
            implot.end_plot()
        imgui.end()

    def _collisions(self, m: OverlayModel) -> None:
        self._begin("Collisions")
        imgui.text(f"candidate pairs {m.candidate_pairs}, colliding {m.colliding_pairs}")
        if implot.begin_plot("##levels", imgui.ImVec2(-1, 100)):
            implot.setup_axes("level reached", "pairs", implot.AxisFlags_.auto_fit, 0)
            # counts start at 0 and the axis shows at least 0..1 (auto-fit centres an empty plot on 0)
            implot.setup_axis_limits(implot.ImAxis_.y1, 0.0, 1.1 * max([1, *m.level_hist]), imgui.Cond_.always)
            if m.level_hist:
                k = len(m.level_hist) - 1  # last level is the exact (triangle) level
                implot.setup_axis_ticks(implot.ImAxis_.x1, [float(i) for i in range(k + 1)],
                                        [str(i) for i in range(k)] + ["exact"])
                implot.plot_bars("pairs", np.array(m.level_hist, np.float64))
            implot.end_plot()
        flags = imgui.TableFlags_.borders | imgui.TableFlags_.scroll_y
        if imgui.begin_table("pairs", 5, flags):
            for name in ("ships", "level", "exact", "sep. bound [m]", "distance [m]"):
                imgui.table_setup_column(name)
            imgui.table_headers_row()
            for r in m.pairs[:200]:
                imgui.table_next_row()
                for cell in (f"{r.ship_a}-{r.ship_b}", str(r.level), "yes" if r.exact else "no",
                             f"{r.sep_bound:.3f}", "-" if math.isnan(r.distance) else f"{r.distance:.3f}"):
                    imgui.table_next_column()
                    imgui.text(cell)
            imgui.end_table()
        imgui.end()

    def _controls(self, c: Controls) -> None:
        self._begin("Controls")
        _, c.target_fps = imgui.slider_float("target fps", c.target_fps, 10.0, 120.0, "%.0f")
        _, c.min_level = imgui.slider_int("min level", c.min_level, 0, c.level_limit)
        _, c.max_level = imgui.slider_int("max level", c.max_level, 0, c.level_limit)
        _, i = imgui.combo("broad phase", BROADPHASES.index(c.broadphase), list(BROADPHASES))
        c.broadphase = BROADPHASES[i]
        _, c.tree_level = imgui.slider_int("tree level", c.tree_level, -1, c.level_limit - 1,
                                           "none" if c.tree_level < 0 else "%d")
        _, c.show_hits = imgui.checkbox("colliding spheres/triangles", c.show_hits)
        _, c.show_bounds = imgui.checkbox("broad-phase bounds", c.show_bounds)
        _, c.backgrounds = imgui.checkbox("panel backgrounds", c.backgrounds)
        _, c.paused = imgui.checkbox("pause", c.paused)
        imgui.same_line()
        if imgui.button("step"):
            c.step_requested = True
        imgui.text(f"camera: {c.camera_mode}")
        imgui.end()

    def _help(self, c: Controls) -> None:
        self._begin("Keys")
        if c.title == "demo":
            imgui.text("demo: the autopilot flies every ship")
        for keys, what in HELP:
            imgui.text(f"{keys:<12} {what}")
        imgui.end()
