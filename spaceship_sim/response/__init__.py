from .impulse import respond

__all__ = ["respond"]
