"""The desktop domain: real Linux apps on a per-session Xvfb display, driven through XTEST."""
