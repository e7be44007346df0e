import MsgKit
