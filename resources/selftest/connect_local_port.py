# The selftest's probe: connect to a local TCP port.
import socket
socket.create_connection(('127.0.0.1', PORT), timeout=2)
print('connected')
