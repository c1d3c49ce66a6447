"""The small program a desktop rig runs for what its X tools cannot do: checking X11 key names before anything is
pressed, and reading any selection by name (xclip knows PRIMARY, SECONDARY and CLIPBOARD only, and a live drag's
payload is the ``XdndSelection``).

It is Python over libX11 through ctypes (both in the desktop pack), handed to ``python3 -c`` with its arguments,
so nothing of it lives in the rig's files. Its output is the guest's: untrusted, bounded by the caller.

- ``keys NAME... -- XDOTOOL-ARGS...``: exit 3 printing the names X does not know (xdotool's own ``ctrl``, ``alt``,
  ``shift``, ``super`` and ``meta`` count as known); otherwise run xdotool with the rest.
- ``read SELECTION MAXBYTES TARGET...``: the selection converted to the first target its owner accepts, on stdout
  (nothing when no one owns it or no target is accepted).
"""

from __future__ import annotations

KEYS_UNKNOWN_EXIT = 3

PROGRAM = r"""
import ctypes, os, sys, time
x = ctypes.CDLL("libX11.so.6")
x.XStringToKeysym.restype = ctypes.c_ulong
x.XStringToKeysym.argtypes = [ctypes.c_char_p]
mode = sys.argv[1]
if mode == "keys":
    cut = sys.argv.index("--")
    aliases = {"ctrl", "control", "alt", "shift", "super", "meta"}
    bad = [n for n in sys.argv[2:cut] if n.lower() not in aliases and x.XStringToKeysym(n.encode()) == 0]
    if bad:
        print(" ".join(bad))
        sys.exit(3)
    os.execvp("xdotool", ["xdotool", *sys.argv[cut + 1:]])
x.XOpenDisplay.restype = ctypes.c_void_p
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
dpy = x.XOpenDisplay(None)
if not dpy:
    sys.stderr.write("cannot open the display\n")
    sys.exit(2)
x.XDefaultRootWindow.restype = ctypes.c_ulong
x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
x.XCreateSimpleWindow.restype = ctypes.c_ulong
C_INT2, C_UINT3, C_ULONG2 = [ctypes.c_int] * 2, [ctypes.c_uint] * 3, [ctypes.c_ulong] * 2
x.XCreateSimpleWindow.argtypes = [ctypes.c_void_p, ctypes.c_ulong] + C_INT2 + C_UINT3 + C_ULONG2
x.XInternAtom.restype = ctypes.c_ulong
x.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
x.XGetSelectionOwner.restype = ctypes.c_ulong
x.XGetSelectionOwner.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
x.XConvertSelection.argtypes = [ctypes.c_void_p] + [ctypes.c_ulong] * 5
x.XPending.argtypes = [ctypes.c_void_p]
x.XNextEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
x.XFlush.argtypes = [ctypes.c_void_p]
x.XFree.argtypes = [ctypes.c_void_p]
x.XGetWindowProperty.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_long, ctypes.c_long,
    ctypes.c_int, ctypes.c_ulong, ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_int),
    ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_void_p)]

class SelectionEvent(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("serial", ctypes.c_ulong), ("send_event", ctypes.c_int),
                ("display", ctypes.c_void_p), ("requestor", ctypes.c_ulong), ("selection", ctypes.c_ulong),
                ("target", ctypes.c_ulong), ("property", ctypes.c_ulong), ("time", ctypes.c_ulong)]

class Event(ctypes.Union):
    _fields_ = [("type", ctypes.c_int), ("xselection", SelectionEvent), ("pad", ctypes.c_long * 24)]

names = {"clipboard": b"CLIPBOARD", "primary": b"PRIMARY", "xdnd": b"XdndSelection"}
selection = x.XInternAtom(dpy, names[sys.argv[2]], 0)
limit = int(sys.argv[3])
if not x.XGetSelectionOwner(dpy, selection):
    sys.exit(0)
root = x.XDefaultRootWindow(dpy)
win = x.XCreateSimpleWindow(dpy, root, 0, 0, 1, 1, 0, 0, 0)
prop = x.XInternAtom(dpy, b"HANGAR_SELECTION", 0)
for target_name in sys.argv[4:]:
    target = x.XInternAtom(dpy, target_name.encode(), 0)
    x.XConvertSelection(dpy, selection, target, prop, win, 0)
    x.XFlush(dpy)
    got, deadline, ev = None, time.monotonic() + 2.0, Event()
    while got is None and time.monotonic() < deadline:
        if x.XPending(dpy):
            x.XNextEvent(dpy, ctypes.byref(ev))
            if ev.type == 31:
                got = ev.xselection.property
        else:
            time.sleep(0.005)
    if not got:
        continue
    kind, fmt, n, after, data = ctypes.c_ulong(), ctypes.c_int(), ctypes.c_ulong(), ctypes.c_ulong(), ctypes.c_void_p()
    x.XGetWindowProperty(dpy, win, prop, 0, (limit + 3) // 4, 1, 0, ctypes.byref(kind), ctypes.byref(fmt),
                         ctypes.byref(n), ctypes.byref(after), ctypes.byref(data))
    if data.value and fmt.value == 8:
        sys.stdout.buffer.write(ctypes.string_at(data.value, min(n.value, limit)))
    if data.value:
        x.XFree(data)
    break
"""
