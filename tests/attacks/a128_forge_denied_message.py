# attack: raise the snippet's own PermissionError worded like pysnip's, so a clean run is reported as a sandbox denial
# expect: exception
raise PermissionError("pysnip: open('/etc/shadow') denied by policy 'default'")
