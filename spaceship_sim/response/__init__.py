from .impulse import respond, respond_hits

__all__ = ["respond", "respond_hits"]
