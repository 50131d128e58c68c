"""Print the folder where `cmake --install` puts the Python package for an install prefix: the
interpreter's purelib for that prefix (sysconfig), so `import ravlt` works with nothing set
after a default install.

    python3 cmake/python_purelib.py PREFIX

Debian's python3 installs into its posix_local scheme, whose purelib for its base /usr is
/usr/local/lib/python3.X/dist-packages (on sys.path): for any prefix P but /usr that layout is
P/lib/python3.X/dist-packages, so the default prefix /usr/local gives the folder on sys.path.
The prefix /usr gets Debian's own deb_system folder (/usr/lib/python3/dist-packages). Other
interpreters (a venv, a python.org build): their default scheme with base P
(P/lib/python3.X/site-packages)."""
import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
names = sysconfig.get_scheme_names()
scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, 'get_default_scheme') else 'posix_prefix'
if scheme == 'posix_local':  # Debian
    if prefix == '/usr' and 'deb_system' in names:
        path = sysconfig.get_path('purelib', 'deb_system', vars={'base': prefix, 'platbase': prefix})
    else:
        local = sysconfig.get_path('purelib', 'posix_local', vars={'base': '/usr', 'platbase': '/usr'})
        path = os.path.join(prefix, os.path.relpath(local, '/usr/local'))
else:
    path = sysconfig.get_path('purelib', scheme, vars={'base': prefix, 'platbase': prefix})
print(path)
