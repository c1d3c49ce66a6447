"""A window that records its input events, for the full-VM tests: Python over libX11 through ctypes (the desktop
image has both), handed to ``python3 -c`` in the guest with the file it appends to. It maps a 1000x700 window named
``recorder`` at the top left, takes the focus once mapped (the line ``mapped``), and writes ``button N X,Y`` (root
coordinates) for each button press and ``key HEX`` (the bytes ``XLookupString`` gives) for each key press."""

# The image's Openbox, slow under TCG, holds what it grabbed and the windows it is to map (README, "Full VMs"), so
# the tests take it out before the recorder starts: killed outright and waited for, since a window manager still
# going when the recorder maps its window takes the map request with it (seen under TCG on a loaded machine).
STOP_OPENBOX = "pkill -KILL -x openbox; for _ in $(seq 120); do pgrep -x openbox || exit 0; sleep 0.5; done; exit 1"

PROGRAM = r"""
import ctypes, select, sys
x = ctypes.CDLL("libX11.so.6")
P, W, I, U, L = ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_uint, ctypes.c_long
x.XOpenDisplay.restype = P
x.XOpenDisplay.argtypes = [ctypes.c_char_p]
d = x.XOpenDisplay(None)
x.XDefaultRootWindow.restype = W
x.XDefaultRootWindow.argtypes = [P]
x.XCreateSimpleWindow.restype = W
x.XCreateSimpleWindow.argtypes = [P, W, I, I, U, U, U, W, W]
x.XSelectInput.argtypes = [P, W, L]
x.XMapRaised.argtypes = [P, W]
x.XStoreName.argtypes = [P, W, ctypes.c_char_p]
x.XNextEvent.argtypes = [P, P]
x.XLookupString.argtypes = [P, ctypes.c_char_p, I, P, P]
x.XSetInputFocus.argtypes = [P, W, I, W]
x.XConnectionNumber.argtypes = [P]
x.XPending.argtypes = [P]
x.XFlush.argtypes = [P]
w = x.XCreateSimpleWindow(d, x.XDefaultRootWindow(d), 0, 0, 1000, 700, 0, 0, 0xFFFFFF)
x.XStoreName(d, w, b"recorder")
x.XSelectInput(d, w, (1 << 0) | (1 << 2) | (1 << 17))  # KeyPress, ButtonPress, StructureNotify
x.XMapRaised(d, w)


class Ev(ctypes.Structure):
    _fields_ = [("type", I), ("serial", W), ("send_event", I), ("display", P), ("window", W), ("root", W),
                ("subwindow", W), ("time", W), ("x", I), ("y", I), ("x_root", I), ("y_root", I), ("state", U),
                ("detail", U), ("same_screen", I), ("pad", L * 16)]


ev, buf = Ev(), ctypes.create_string_buffer(16)
out = open(sys.argv[1], "a", buffering=1)
fd, mapped = x.XConnectionNumber(d), False
while True:
    # Until the window is mapped, the map is asked again every 3 s: a request a dying window manager took is lost.
    while not mapped and not x.XPending(d):
        x.XFlush(d)
        if not select.select([fd], [], [], 3)[0]:
            x.XMapRaised(d, w)
    x.XNextEvent(d, ctypes.byref(ev))
    if ev.type == 19:  # MapNotify
        x.XSetInputFocus(d, w, 1, 0)
        mapped = True
        out.write("mapped\n")
    elif ev.type == 4:  # ButtonPress
        out.write(f"button {ev.detail} {ev.x_root},{ev.y_root}\n")
    elif ev.type == 2:  # KeyPress
        n = x.XLookupString(ctypes.byref(ev), buf, 16, None, None)
        out.write(f"key {buf.raw[:n].hex()}\n")
"""
