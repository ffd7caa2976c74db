#![no_main]
//! `KUBERNETES_EXEC_INFO` as a plugin reads it.

use exec_credential::ExecCredential;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(request) = ExecCredential::from_exec_info(text) else {
        return;
    };
    let info = request.to_exec_info();
    assert!(info.ends_with('\n'));
    let again = ExecCredential::from_exec_info(&info).expect("re-encoded exec info decodes");
    assert_eq!(again.to_exec_info(), info);
    assert_eq!(again.may_prompt(), request.may_prompt());
    assert_eq!(again.cluster(), request.cluster());
});
