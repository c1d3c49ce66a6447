"""The public website: manual pages with markdown twins, agent discovery files, feeds and the docs tool server.

``website_app(base_url, sources)`` in ``hangar.site.app`` returns the Starlette app; everything it serves is
rendered once when the app is built, so serving a page is a dictionary lookup.
"""
