"""What the public modules (``hdist.metrics``, ``hdist.neighbors``, ...) share: each is a
face over the module of a lower layer that implements it."""


def publish(face, impl, names):
    """Show ``names`` of module ``impl`` as names of the public module ``face``: classes
    and functions say they belong to it (``help``, ``repr``, pickles), and the face's
    docstring is the implementation's."""
    import sys
    mod = sys.modules[face]
    mod.__doc__ = impl.__doc__
    for name in names:
        obj = getattr(impl, name)
        if getattr(obj, "__module__", None) == impl.__name__:
            obj.__module__ = face
