"""WebKitGTK's MiniBrowser (``engine-c`` on the wire): its launch recipe and session (``engine``), a small classic
W3C WebDriver client (``webdriver``), and the host's ffmpeg turning its PNG stills into JPEG (``transcode``)."""
