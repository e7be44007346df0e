import MsgCLI
MsgMain.run()
