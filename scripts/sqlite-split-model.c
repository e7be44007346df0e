// The SQLite work alone of msg's store, for records stored whole (schema 7) or with
// their content apart (schema 8, Plugins/SQLiteStore/SQLitePayloads.swift), or with
// their history as rows of its own too (weighed and left out), or with a claim that
// writes no record text, only the status and lease columns, its history entry
// written with the outcome instead (weighed for #52 and left out: 5% less):
// queue add of 100,000, then a claim and an outcome update of each by rowid in
// batches of 1,024 (one commit each), then a listing through the FIFO index.
//
// Usage: cc -O2 scripts/sqlite-split-model.c -lsqlite3 -o model
//        ./model FILE MODE EXTRA   (MODE 0 whole, 1 content apart, 2 history rows too,
//                                   3 content apart and a claim of columns only;
//                                   EXTRA: bytes of body beyond the typical 115 of content)
// scripts/bench --sqlite-model runs it for the sizes DESIGN.md quotes.
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
static void ex(sqlite3*db,const char*s){char*e=0;if(sqlite3_exec(db,s,0,0,&e)){fprintf(stderr,"%s: %s\n",s,e);exit(1);}}
static sqlite3_stmt*prep(sqlite3*db,const char*s){sqlite3_stmt*st;if(sqlite3_prepare_v2(db,s,-1,&st,0)){fprintf(stderr,"%s: %s\n",s,sqlite3_errmsg(db));exit(1);}return st;}
static void run(sqlite3*db,sqlite3_stmt*s){if(sqlite3_step(s)!=SQLITE_DONE){fprintf(stderr,"step: %s\n",sqlite3_errmsg(db));exit(1);}sqlite3_reset(s);}
int main(int argc,char**argv){
  int mode=atoi(argv[2]), split=mode==3?1:mode; int extra=argc>3?atoi(argv[3]):0; int N=100000, B=1024;
  sqlite3*db; sqlite3_open(argv[1],&db);
  ex(db,"PRAGMA page_size=16384;PRAGMA journal_mode=WAL;PRAGMA synchronous=FULL;");
  const char*idx="CREATE INDEX messages_fifo ON messages(created_at, id);CREATE INDEX messages_open ON messages(created_at, id, recipient) WHERE open IS NOT NULL;CREATE INDEX messages_inflight ON messages(lease_until) WHERE lease_until IS NOT NULL;CREATE INDEX messages_due ON messages(due_at) WHERE due_at IS NOT NULL;CREATE INDEX messages_parked ON messages(created_at, id) WHERE open IS NULL AND status IN ('dead', 'held');";
  if(!split) ex(db,"CREATE TABLE messages (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, recipient TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, due_at INTEGER, lease_until INTEGER, open INTEGER, record TEXT NOT NULL, history_at INTEGER NOT NULL);");
  else ex(db,"CREATE TABLE payloads (rid INTEGER PRIMARY KEY, content BLOB NOT NULL, extras BLOB);"
             "CREATE TABLE messages (rid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, status TEXT NOT NULL, recipient TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, due_at INTEGER, lease_until INTEGER, open INTEGER, life BLOB NOT NULL, events INTEGER NOT NULL);"
             "CREATE TABLE history (rid INTEGER NOT NULL, seq INTEGER NOT NULL, event BLOB NOT NULL, PRIMARY KEY (rid, seq)) WITHOUT ROWID;");
  ex(db,idx);
  static char content[20000], life[200], rec[20000], ev[100];
  memset(content,'c',115+extra);content[115+extra]=0; memset(life,'l',120);life[120]=0; memset(ev,'e',80);ev[80]=0;
  sqlite3_stmt*ins=split?prep(db,"INSERT INTO messages VALUES(NULL,?1,'queued',?2,?3,?3,NULL,NULL,1,?4,1)"):prep(db,"INSERT INTO messages VALUES(NULL,?1,'queued',?2,?3,?3,NULL,NULL,1,?4,237)");
  sqlite3_stmt*insp=split?prep(db,"INSERT INTO payloads VALUES(?1,?2,NULL)"):0;
  sqlite3_stmt*insh=split?prep(db,"INSERT INTO history VALUES(?1,?2,?3)"):0;
  double t0=now();
  for(int i=0;i<N;i++){ if(i%B==0){ if(i) ex(db,"COMMIT"); ex(db,"BEGIN");}
    char id[64],to[64];sprintf(id,"01a21ab7-%08d-73d4-9aa7-4a0d5c7713e1",i);sprintf(to,"user%d@example.com",i%5000);
    int len=split?120:319+extra; memset(rec,'r',len);rec[len]=0;
    sqlite3_bind_text(ins,1,id,-1,SQLITE_TRANSIENT);sqlite3_bind_text(ins,2,to,-1,SQLITE_TRANSIENT);sqlite3_bind_int64(ins,3,1700000000000LL+i);sqlite3_bind_blob(ins,4,split?life:rec,len,SQLITE_STATIC);run(db,ins);
    if(split){sqlite3_int64 rid=sqlite3_last_insert_rowid(db);sqlite3_bind_int64(insp,1,rid);sqlite3_bind_blob(insp,2,content,115+extra,SQLITE_STATIC);run(db,insp);
      sqlite3_bind_int64(insh,1,rid);sqlite3_bind_int(insh,2,0);sqlite3_bind_blob(insh,3,ev,80,SQLITE_STATIC);run(db,insh);}
  }
  ex(db,"COMMIT");
  double tadd=now()-t0;
  sqlite3_stmt*claim=mode==3?prep(db,"UPDATE messages SET status='sending', updated_at=?2, lease_until=?3, due_at=NULL WHERE rid=?1 AND status='queued'")
                   :split?prep(db,"UPDATE messages SET status='sending', updated_at=?2, lease_until=?3, due_at=NULL, life=?4, events=2 WHERE rid=?1 AND status='queued'")
                          :prep(db,"UPDATE messages SET status='sending', updated_at=?2, lease_until=?3, due_at=NULL, record=?4, history_at=310 WHERE rid=?1 AND status='queued'");
  sqlite3_stmt*done=split?prep(db,"UPDATE messages SET status='sent', updated_at=?2, lease_until=NULL, open=NULL, life=?4, events=3 WHERE rid=?1 AND status='sending'")
                          :prep(db,"UPDATE messages SET status='sent', updated_at=?2, lease_until=NULL, open=NULL, record=?4, history_at=235 WHERE rid=?1 AND status='sending'");
  t0=now();
  for(int b=0;b<N;b+=B){
    ex(db,"BEGIN");
    for(int i=b;i<b+B&&i<N;i++){int len=split==1?330:split?170:400+extra;memset(rec,'s',len);sqlite3_bind_int64(claim,1,i+1);sqlite3_bind_int64(claim,2,5);sqlite3_bind_int64(claim,3,99);if(mode!=3)sqlite3_bind_blob(claim,4,rec,len,SQLITE_STATIC);run(db,claim);
      if(split==2){sqlite3_bind_int64(insh,1,i+1);sqlite3_bind_int(insh,2,1);sqlite3_bind_blob(insh,3,ev,80,SQLITE_STATIC);run(db,insh);}}
    ex(db,"COMMIT");ex(db,"BEGIN");
    for(int i=b;i<b+B&&i<N;i++){int len=mode==3?390:split==1?360:split?120:453+extra;memset(rec,'t',len);sqlite3_bind_int64(done,1,i+1);sqlite3_bind_int64(done,2,6);sqlite3_bind_blob(done,4,rec,len,SQLITE_STATIC);run(db,done);
      if(split==2){sqlite3_bind_int64(insh,1,i+1);sqlite3_bind_int(insh,2,2);sqlite3_bind_blob(insh,3,ev,80,SQLITE_STATIC);run(db,insh);}}
    ex(db,"COMMIT");
  }
  double tflush=now()-t0;
  sqlite3_stmt*ls=split?prep(db,"SELECT p.content, m.life, p.extras FROM messages m INDEXED BY messages_fifo JOIN payloads p ON p.rid = m.rid ORDER BY m.created_at, m.id")
                       :prep(db,"SELECT record, history_at FROM messages INDEXED BY messages_fifo ORDER BY created_at, id");
  t0=now(); long total=0; for(int k=0;k<2;k++){ while(sqlite3_step(ls)==SQLITE_ROW){total+=sqlite3_column_bytes(ls,0)+sqlite3_column_bytes(ls,1);} sqlite3_reset(ls);}
  double tls=(now()-t0)/2;
  const char*name=mode==3?"claim_columns_only":split==2?"history_rows":split?"content_apart":"whole";
  printf("model_%s_%d_add: %.3f s\nmodel_%s_%d_claim_and_outcome: %.3f s\nmodel_%s_%d_listing: %.3f s\n",name,115+extra,tadd,name,115+extra,tflush,name,115+extra,tls);
  (void)total;
}
