"""A desktop notification server for the tests: owns org.freedesktop.Notifications on the
session bus named by $DBUS_SESSION_BUS_ADDRESS (GLib's own D-Bus, python3-gi), prints "ready"
once it owns the name, then one JSON line per Notify call (app name, summary, body), and
answers each with a notification id, as a desktop's server does."""

import json
import sys

from gi.repository import Gio, GLib

XML = """
<node>
  <interface name="org.freedesktop.Notifications">
    <method name="Notify">
      <arg type="s" direction="in"/><arg type="u" direction="in"/>
      <arg type="s" direction="in"/><arg type="s" direction="in"/>
      <arg type="s" direction="in"/><arg type="as" direction="in"/>
      <arg type="a{sv}" direction="in"/><arg type="i" direction="in"/>
      <arg type="u" direction="out"/>
    </method>
    <method name="GetCapabilities"><arg type="as" direction="out"/></method>
    <method name="GetServerInformation">
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
      <arg type="s" direction="out"/><arg type="s" direction="out"/>
    </method>
    <method name="CloseNotification"><arg type="u" direction="in"/></method>
  </interface>
</node>
"""

count = 0


def on_call(conn, sender, path, iface, method, params, invocation):
    global count
    if method == "Notify":
        app, _replaces, _icon, summary, body, _actions, _hints, _timeout = params.unpack()
        count += 1
        print(json.dumps({"app": app, "summary": summary, "body": body}), flush=True)
        invocation.return_value(GLib.Variant("(u)", (count,)))
    elif method == "GetCapabilities":
        invocation.return_value(GLib.Variant("(as)", (["body"],)))
    elif method == "GetServerInformation":
        invocation.return_value(GLib.Variant("(ssss)", ("test", "toolsmith", "1", "1.2")))
    else:
        invocation.return_value(None)


def main():
    node = Gio.DBusNodeInfo.new_for_xml(XML)
    loop = GLib.MainLoop()

    def on_bus(conn, _name):
        conn.register_object(
            "/org/freedesktop/Notifications", node.interfaces[0], on_call, None, None
        )

    Gio.bus_own_name(
        Gio.BusType.SESSION,
        "org.freedesktop.Notifications",
        Gio.BusNameOwnerFlags.NONE,
        on_bus,
        lambda *_: print("ready", flush=True),
        lambda *_: sys.exit("lost the name"),
    )
    loop.run()


main()
