"""ImGui + ImPlot overlay: draws an OverlayModel and edits a Controls object.

Panels sit at fixed places (top-left timing, top-right collisions, bottom-left controls,
bottom-right help) so screenshots are comparable. Imports imgui_bundle's pyglet backend,
which needs a GL context: only the app commands import this module.

Adding a panel touches two files: overlay_model.py (its place in `panel_rects` and the fields it
shows, computed from FrameStats / the narrow-phase result in `OverlayModel.update`, where
tests/app/test_overlay_model.py can check them without GL) and this one (a `_panel` method that
draws those fields between `_begin(name)` and `imgui.end()`, called from `draw`).
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

from ..config import BROADPHASE_NAMES
from .geometry import level_color
from .keys import HELP
from .swept import SWEPT_FACE_COLOR
from .overlay_model import COLUMNS, SERIES, OverlayModel, PairRow, interval_line, panel_rects, sort_rows

PANEL_ALPHA = 0.6  # panel backgrounds: text stays readable over ships and stars, the scene shows through


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
    backgrounds: bool = True        # semi-transparent panel backgrounds
    overlay_visible: bool = True    # F1
    follow_pair: tuple[int, int] | None = None  # pair picked in the table: the action camera's subject


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
            texture = self.ctx.external_texture(gl_id, (1, 1), 4, 0, "f1")
            # the font is drawn at 1:1 pixels: nearest sampling looks the same and costs a
            # fraction of bilinear under software GL (panel backgrounds sample it too)
            texture.filter = (moderngl.NEAREST, moderngl.NEAREST)
            self.textures[gl_id] = texture
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
        self.placed_for: tuple[int, int] | None = None  # window size the panels were placed for
        self.backgrounds = None
        self.sort = (3, False)  # table order: COLUMNS index, descending (closest pairs first)
        self.rows_drawn = 0     # pair-table rows of the last frame (tests read it)
        self.row_rects: dict[tuple[int, int], tuple[float, float, float, float]] = {}  # ... and where

    def wants_keyboard(self) -> bool:
        return imgui.get_io().want_capture_keyboard

    def wants_mouse(self) -> bool:
        return imgui.get_io().want_capture_mouse

    def draw(self, model: OverlayModel, controls: Controls, labels=()) -> None:
        """Build and render one ImGui frame into the current framebuffer.
        labels: (x, y, text, rgb) scene annotations [window pixels from the top-left]."""
        self.impl.process_inputs()
        self._set_backgrounds(controls.backgrounds)
        imgui.new_frame()
        self._replace = imgui.Cond_.always if self.placed_for != (self.width, self.height) else imgui.Cond_.once
        self.placed_for = (self.width, self.height)  # a resized window gets its panels placed anew
        self._labels(labels)
        self._timing(model)
        self._collisions(model, controls)
        self._controls(controls)
        self._help(controls)
        imgui.render()
        self.impl.render(imgui.get_draw_data())

    def _labels(self, labels) -> None:
        draw = imgui.get_background_draw_list()  # under the panels
        for x, y, text, rgb in labels:
            draw.add_text(imgui.ImVec2(x + 1, y + 1), imgui.get_color_u32(imgui.ImVec4(0, 0, 0, 1)), text)
            draw.add_text(imgui.ImVec2(x, y), imgui.get_color_u32(imgui.ImVec4(*rgb, 1)), text)

    def _set_backgrounds(self, on: bool) -> None:
        """Panel backgrounds on or off (the window flag in `_begin`). Plots never get their own
        background: over a panel it would blend the same pixels twice, and every blended pixel
        costs render time under software GL."""
        if self.backgrounds is None:
            clear = imgui.ImVec4(0, 0, 0, 0)
            for col in (implot.Col_.frame_bg, implot.Col_.plot_bg, implot.Col_.legend_bg):
                implot.get_style().set_color_(col, clear)
        self.backgrounds = on

    def _begin(self, name: str) -> None:
        x, y, w, h = panel_rects(self.width, self.height)[name]
        imgui.set_next_window_pos(imgui.ImVec2(x, y), self._replace)
        imgui.set_next_window_size(imgui.ImVec2(w, h), self._replace)
        imgui.set_next_window_bg_alpha(PANEL_ALPHA)
        imgui.begin(name, None, 0 if self.backgrounds else imgui.WindowFlags_.no_background)

    def _timing(self, m: OverlayModel) -> None:
        self._begin("Frame timing")
        if m.status:
            imgui.text_colored(imgui.ImVec4(1.0, 0.8, 0.2, 1.0), m.status)
        imgui.text(f"frame {m.frames_run}   target {m.target_ms:.1f} ms" + ("   OVERRUN" if m.overrun else ""))
        imgui.text(m.accuracy_lines()[0])
        imgui.text(f"render: predicted {m.render_predicted_ms:.2f} ms, actual {m.render_actual_ms:.2f} ms")
        imgui.text(f"detection ms: budget {m.budget_ms:.2f}, used {m.detection_used_ms:.2f}, "
                   f"held back {m.margin_ms:.2f}")
        imgui.text(m.load_line)
        if imgui.is_item_hovered():
            imgui.set_tooltip("the 1-minute load average; how often the OS took this process's core since the start,\n"
                              "and the frames over target only for the time it took (late: within it without that)")
        frames, series = m.arrays()
        if implot.begin_plot("##frame times", imgui.ImVec2(-1, -1)):
            implot.setup_axes("frame", "ms", implot.AxisFlags_.auto_fit, 0)
            implot.setup_legend(implot.Location_.north, implot.LegendFlags_.horizontal | implot.LegendFlags_.outside)
            if math.isfinite(m.target_ms):  # fixed range: start-up spikes (numba compile) would squash the plot
                implot.setup_axis_limits(implot.ImAxis_.y1, 0.0, 2.5 * m.target_ms, implot.Cond_.always)
            if len(frames):
                for name in SERIES:
                    implot.plot_line(name, frames, series[name])
                if math.isfinite(m.target_ms):
                    implot.plot_inf_lines("target", np.array([m.target_ms]),
                                          implot.Spec(flags=implot.InfLinesFlags_.horizontal))
            implot.end_plot()
        imgui.end()

    def _collisions(self, m: OverlayModel, c: Controls) -> None:
        self._begin("Collisions")
        hits = sum(math.isfinite(r.sep_bound) for r in m.pairs)  # pairs found apart have an infinite bound
        apart = f", measured apart {len(m.pairs) - hits}" if hits < len(m.pairs) else ""
        imgui.text(f"candidate pairs {m.candidates_now}, colliding {hits}{apart}")
        if m.swept:
            imgui.text_colored(imgui.ImVec4(*SWEPT_FACE_COLOR), m.swept)
        imgui.text(f"sep. bound now {_metres(m.sep_bound_now)}")
        if imgui.is_item_hovered():
            imgui.set_tooltip("smallest separation bound of the colliding pairs below")
        imgui.text(interval_line(*m.interval_width))
        imgui.text(m.accuracy_lines()[1])
        if imgui.is_item_hovered():
            imgui.set_tooltip(f"over all {m.accuracy.verdicts} colliding pair verdicts since the start (each "
                              "detection sample's), in metres and as a fraction of the pair's mean bounding radius:\n"
                              "how far apart ships counted as colliding may be at most")
        self._level_histogram(m)
        self._pair_table(m.pairs, c, exact_level=len(m.level_hist) - 1)
        imgui.end()

    def _level_histogram(self, m: OverlayModel) -> None:
        if not implot.begin_plot("##levels", imgui.ImVec2(-1, 90)):
            return
        implot.setup_axes("level reached", "pairs", implot.AxisFlags_.auto_fit, 0)
        # counts start at 0 and the axis shows at least 0..1 (auto-fit centres an empty plot on 0)
        implot.setup_axis_limits(implot.ImAxis_.y1, 0.0, 1.1 * max([1, *m.level_hist]), imgui.Cond_.always)
        if m.level_hist:
            k = len(m.level_hist) - 1  # last level is the exact (triangle) level
            implot.setup_axis_ticks(implot.ImAxis_.x1, [float(i) for i in range(k + 1)],
                                    [str(i) for i in range(k)] + ["exact"])
            for level, count in enumerate(m.level_hist):  # each bar in its level's sphere colour
                spec = implot.Spec(fill_color=imgui.ImVec4(*level_color(level, k), 1.0))
                implot.plot_bars(f"##{level}", np.array([level], np.float64), np.array([count], np.float64),
                                 0.67, spec)
        implot.end_plot()

    def _pair_table(self, rows: list[PairRow], c: Controls, exact_level: int) -> None:
        """One row per colliding pair, sortable by any column; clicking a row makes the action
        camera follow that pair (clicking it again lets it go)."""
        columns = COLUMNS
        flags = (imgui.TableFlags_.borders | imgui.TableFlags_.scroll_y | imgui.TableFlags_.sortable
                 | imgui.TableFlags_.sizing_fixed_fit | imgui.TableFlags_.row_bg)
        self.rows_drawn, self.row_rects = 0, {}
        if not imgui.begin_table("pairs", len(columns), flags):
            return
        imgui.table_setup_scroll_freeze(0, 1)
        for i, (name, _, _) in enumerate(columns):
            imgui.table_setup_column(name, imgui.TableColumnFlags_.default_sort if i == self.sort[0] else 0)
        imgui.table_headers_row()
        specs = imgui.table_get_sort_specs()
        if specs is not None and specs.specs_count:
            spec = specs.get_specs(0)
            self.sort = (spec.column_index, spec.get_sort_direction() == imgui.SortDirection.descending)
        for r in sort_rows(rows, min(self.sort[0], len(columns) - 1), self.sort[1])[:200]:
            imgui.table_next_row()
            for i, (_, _, cell) in enumerate(columns):
                imgui.table_next_column()
                if i == 0:
                    self._pair_cell(r, c, cell(r), exact_level)
                else:
                    imgui.text(cell(r))
            self.rows_drawn += 1
        imgui.end_table()

    def _pair_cell(self, r: PairRow, c: Controls, text: str, exact_level: int) -> None:
        pair = (r.ship_a, r.ship_b)
        imgui.push_style_color(imgui.Col_.text, imgui.ImVec4(*level_color(r.level, exact_level), 1.0))
        clicked, _ = imgui.selectable(text, c.follow_pair == pair, imgui.SelectableFlags_.span_all_columns)
        (x0, y0), (x1, y1) = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        self.row_rects[pair] = (x0, y0, x1, y1)
        imgui.pop_style_color()
        if clicked:
            c.follow_pair = None if c.follow_pair == pair else pair

    def _controls(self, c: Controls) -> None:
        self._begin("Controls")
        _, c.target_fps = imgui.slider_float("target fps", c.target_fps, 10.0, 120.0, "%.0f")
        _, c.min_level = imgui.slider_int("min level", c.min_level, 0, c.level_limit)
        _, c.max_level = imgui.slider_int("max level", c.max_level, 0, c.level_limit)
        _, i = imgui.combo("broad phase", BROADPHASE_NAMES.index(c.broadphase), list(BROADPHASE_NAMES))
        c.broadphase = BROADPHASE_NAMES[i]
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
            imgui.text(f"{keys:<14} {what}")
        imgui.end()


def _metres(x: float) -> str:
    return f"{x:.3f} m" if math.isfinite(x) else "-"
