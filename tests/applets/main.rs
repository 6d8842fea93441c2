//! The trbox binary, applet by applet, as a user runs it (live tracefs where the applet needs one).

use crate::test_common as common;

mod docs;
mod messages;
mod multicall;
mod options;
mod tr_cat;
mod tr_cat_file;
mod tr_cat_hostile;
mod tr_cat_lastboot;
mod tr_cat_net;
mod tr_cat_net_listen;
mod tr_cat_parquet;
mod tr_cat_perfetto;
mod tr_cat_record;
mod tr_cat_slices;
mod tr_cat_stream;
mod tr_cat_threads;
mod tr_event;
mod tr_event_probes;
mod tr_event_state;
mod tr_graph;
mod tr_lat;
mod tr_lat_tracers;
mod tr_on;
mod tr_stack;
